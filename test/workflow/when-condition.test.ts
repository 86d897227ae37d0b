/** The `when` language: parsed and evaluated over plain data, never eval. */
import { describe, expect, test } from "bun:test";
import { applyMapping, compileMapping, mappingPaths, type MappingIssue } from "../../src/workflow/input-mapping.ts";
import { parsePath, resolvePath } from "../../src/workflow/path-expression.ts";
import { compileCondition, evaluateCondition } from "../../src/workflow/when-condition.ts";

const scope = {
  input: { mode: "fast", n: 3, tags: ["a", "b"], name: "fox" },
  nodes: { check: { status: "succeeded", result: { valid: false, score: 0.4, failed: ["caption"] } } },
};
const when = (text: string, data: unknown = scope) => evaluateCondition(compileCondition(text), data);

describe("when conditions", () => {
  test("comparisons of numbers, strings, booleans and null", () => {
    expect(when("$.input.n == 3")).toBe(true);
    expect(when("$.input.n != 3")).toBe(false);
    expect(when("$.input.n >= 3 and $.input.n < 4")).toBe(true);
    expect(when("$.nodes.check.result.score > 0.5")).toBe(false);
    expect(when("$.input.mode == 'fast'")).toBe(true);
    expect(when('$.input.mode == "slow"')).toBe(false);
    expect(when("$.nodes.check.result.valid == false")).toBe(true);
    expect(when("$.input.missing == null")).toBe(true);
    expect(when("$.input.n == -3")).toBe(false);
  });

  test("and, or, not, words and symbols, parentheses, precedence", () => {
    expect(when("not $.nodes.check.result.valid")).toBe(true);
    expect(when("!$.nodes.check.result.valid && $.input.n == 3")).toBe(true);
    expect(when("$.input.n == 1 or $.input.n == 3 and $.input.mode == 'fast'")).toBe(true);
    expect(when("($.input.n == 1 or $.input.n == 3) and $.input.mode == 'slow'")).toBe(false);
    expect(when("not ($.input.n == 3)")).toBe(false);
  });

  test("in: membership in lists and literal lists, substrings, map keys", () => {
    expect(when("'caption' in $.nodes.check.result.failed")).toBe(true);
    expect(when("'image' in $.nodes.check.result.failed")).toBe(false);
    expect(when("$.input.mode in ['fast', 'turbo']")).toBe(true);
    expect(when("'ox' in $.input.name")).toBe(true);
    expect(when("'valid' in $.nodes.check.result")).toBe(true);
  });

  test("mismatched types never compare as ordered; a bare path is truthiness (empty list false)", () => {
    expect(when("$.input.mode > 1")).toBe(false);
    expect(when("$.input.missing < 1")).toBe(false);
    expect(when("$.input.tags")).toBe(true);
    expect(when("$.input.none", { input: { none: [] } })).toBe(false);
  });

  test("paths never reach prototypes or run code", () => {
    expect(when("$.input.constructor")).toBe(false);
    expect(when("$.input.__proto__ == null")).toBe(true);
    expect(resolvePath({ a: "x" }, ["a", "length"])).toBeUndefined();
    expect(() => compileCondition("process.exit(1)")).toThrow(/unknown word 'process'/);
    expect(() => compileCondition("$.input.x == `1`")).toThrow(/unexpected '`'/);
  });

  test("syntax errors name the position", () => {
    const at = (text: string) => {
      try {
        compileCondition(text);
      } catch (error) {
        return [(error as { position: number }).position, (error as Error).message];
      }
      return undefined;
    };
    expect(at("$.input.x ==")).toEqual([12, "the condition ends too early"]);
    expect(at("$.input.x == 1 1")).toEqual([15, "unexpected text after the condition"]);
    expect(at("($.input.x")).toEqual([10, "expected ')'"]);
    expect(at("$.input.")).toEqual([8, "expected a name after '.'"]);
    expect(at("'open")).toEqual([0, "unterminated string"]);
  });

  test("the paths a condition reads are listed for the loader", () => {
    expect(compileCondition("$.a.b == 1 or $.nodes.x.result[0]").paths).toEqual([["a", "b"], ["nodes", "x", "result", 0]]);
    expect(parsePath('$.feedback["needs work"][2]')).toEqual(["feedback", "needs work", 2]);
  });
});

describe("input mappings", () => {
  test("paths are replaced, literals kept, missing keys left out, $$ escapes a dollar", () => {
    const mapping = compileMapping({ prompt: "$.input.name", first: "$.input.tags[0]", nope: "$.input.missing", size: 512, price: "$$5", list: ["$.input.n", "x"], nested: { valid: "$.nodes.check.result.valid" } });
    expect(applyMapping(mapping, scope)).toEqual({ prompt: "fox", first: "a", size: 512, price: "$5", list: [3, "x"], nested: { valid: false } });
    expect(mappingPaths(mapping).map((p) => p.at)).toEqual([["prompt"], ["first"], ["nope"], ["list", 0], ["nested", "valid"]]);
  });

  test("a whole-path mapping copies (the run's data is never shared with a payload)", () => {
    const result = applyMapping(compileMapping("$.input"), scope) as Record<string, unknown>;
    expect(result).toEqual(scope.input);
    (result.tags as string[]).push("c");
    expect(scope.input.tags).toEqual(["a", "b"]);
  });

  test("bad paths are collected with where they are", () => {
    const issues: MappingIssue[] = [];
    compileMapping({ a: { b: "$.input." } }, issues);
    expect(issues).toEqual([{ at: ["a", "b"], message: `bad path "$.input.": expected a name after '.'` }]);
  });
});
