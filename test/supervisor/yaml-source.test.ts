import { describe, expect, test } from "bun:test";
import { describeValue, formatYamlPath, issueMessage, sourceError, valueAt, YamlSource } from "../../src/supervisor/yaml-source.ts";
import { ErrorCode } from "../../mesh/errors.ts";

describe("YamlSource", () => {
  const text = "name: a\nnodes:\n  - id: x\n    timeout_ms:\nversion: 1.0\n";
  const src = YamlSource.parse(text, "workflow file");

  test("keeps the data and where each path sits", () => {
    expect(src.syntaxIssues).toEqual([]);
    expect(src.data).toEqual({ name: "a", nodes: [{ id: "x", timeout_ms: null }], version: 1 });
    expect(src.where(["nodes", 0, "id"])).toEqual({ line: 3, col: 9 });
    expect(src.where(["nodes", 0, "id"], true)).toEqual({ line: 3, col: 5 });
  });

  test("an empty value points just past its key, a missing key at its nearest ancestor", () => {
    expect(src.where(["nodes", 0, "timeout_ms"])).toEqual({ line: 4, col: 16 });
    expect(src.where(["nodes", 0, "retries", "max"])).toEqual({ line: 3, col: 5 });
    expect(src.where(["nodes", 7])).toEqual({ line: 3, col: 3 });
    expect(src.where([])).toEqual({ line: 1, col: 1 });
  });

  test("scalarText gives a top-level scalar as written", () => {
    expect(src.scalarText("version")).toBe("1.0");
    expect(src.scalarText("nodes")).toBeUndefined();
  });

  test("syntax errors come located, named after the kind of file, with no data", () => {
    const multi = YamlSource.parse("a: 1\n---\nb: 2\n", "mesh file");
    expect(multi.data).toBeUndefined();
    expect(multi.syntaxIssues).toEqual([{ line: 2, col: 1, path: "", message: "invalid YAML: a mesh file holds one YAML document" }]);
    const bad = YamlSource.parse("a: [1\n", "workflow file").syntaxIssues;
    expect(bad.length).toBeGreaterThan(0);
    expect(bad[0]!.message).toStartWith("invalid YAML: ");
  });

  test("an alias bomb is a syntax issue at 1:1, not a hang", () => {
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 0; i < 8; i++) bomb.push(`${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10).fill(`*${String.fromCharCode(97 + i)}`).join(", ")}]`);
    const issues = YamlSource.parse(`${bomb.join("\n")}\n`, "mesh file").syntaxIssues;
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ line: 1, col: 1, path: "" });
    expect(issues[0]!.message).toStartWith("invalid YAML: ");
  });
});

describe("messages", () => {
  test("paths, values and schema messages as text", () => {
    expect(formatYamlPath(["nodes", 2, "retries", "max"])).toBe("nodes[2].retries.max");
    expect(formatYamlPath(["env", "1X"])).toBe('env["1X"]');
    expect(formatYamlPath([])).toBe("");
    expect(valueAt({ nodes: [{ id: "a" }] }, ["nodes", 0, "id"])).toBe("a");
    expect(valueAt({ nodes: 3 }, ["nodes", 0, "id"])).toBeUndefined();
    expect([describeValue([1]), describeValue({}), describeValue(null), describeValue("two")]).toEqual(["a list", "a map", "an empty value", '"two"']);
    expect(issueMessage("expected an integer from 1 to 64", "two")).toBe('expected an integer from 1 to 64, got "two"');
    expect(issueMessage("expected a name", undefined)).toBe("missing required key (expected a name)");
    expect(issueMessage("max_ms must not be below initial_ms", 5)).toBe("max_ms must not be below initial_ms");
  });

  test("sourceError lists issues in file order, once each, with node and path when given", () => {
    const issues = [
      { line: 9, col: 3, path: "nodes[1]", node: "b", message: "late" },
      { line: 2, col: 1, path: "", message: "whole file" },
      { line: 9, col: 3, path: "nodes[1]", node: "b", message: "late" },
    ];
    const error = sourceError("w.yaml", issues);
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error.message.split("\n")).toEqual(["w.yaml:2:1: whole file", 'w.yaml:9:3: node "b": nodes[1]: late']);
    expect(error.fields).toMatchObject({ reason: "3 problems in w.yaml", file: "w.yaml" });
    expect((error.fields.issues as unknown[])[0]).toEqual(issues[0]);
  });
});
