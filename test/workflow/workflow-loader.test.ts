/** Workflow files validated at load: every problem at once, each at its file:line:col, naming the node. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { HermesError } from "../../mesh/errors.ts";
import { loadMeshFile, parseMeshFile } from "../../src/supervisor/mesh-file.ts";
import { WorkflowGraph } from "../../src/workflow/workflow-graph.ts";
import { loadWorkflow, parseWorkflow } from "../../src/workflow/workflow-loader.ts";
import { checkProviders, meshFileProviders, readModuleCapabilities } from "../../src/workflow/workflow-providers.ts";

const ROOT = join(import.meta.dir, "../..");
const SEED = join(ROOT, "actors/workflows/image-caption.yaml");

/** The lines of the error a workflow text throws. */
function problems(yaml: string): string[] {
  try {
    parseWorkflow(yaml.replace(/^\n/, ""), "flow.yaml");
  } catch (error) {
    expect(error).toBeInstanceOf(HermesError);
    expect((error as HermesError).code).toBe(2);
    return (error as Error).message.split("\n");
  }
  throw new Error("expected the workflow to be rejected");
}

describe("workflow loader", () => {
  test("the seed workflow loads: parallel image and caption, then validate; the placeholder is image's failure branch", () => {
    const wf = loadWorkflow(SEED);
    expect(wf.name).toBe("image-caption");
    expect(wf.version).toBe("1");
    expect(wf.order).toEqual(["image", "placeholder_image", "caption", "validate"]);
    expect(wf.graph.upstream("validate")).toEqual(["image", "caption"]);
    expect(wf.nodes.get("placeholder_image")!.handles).toBe("image");
    expect(wf.nodes.get("image")!.retry).toEqual({ max: 2, backoff_ms: 50, factor: 2, max_backoff_ms: 10_000 });
    expect(wf.nodes.get("validate")!.sendBack).toMatchObject({ to: ["image", "caption"], only: ["result", "failed"], maxRounds: 3 });
    expect(wf.locate("caption", "capability")).toEqual({ line: 30, col: 17 });
  });

  test("the seed design's workflow loads as written: version 1.0 kept as text, both generators upstream of the validator", () => {
    const wf = loadWorkflow(join(ROOT, "actors/workflows/image_with_caption.yaml"));
    expect(wf.name).toBe("image_caption_workflow");
    expect(wf.version).toBe("1.0");
    expect(wf.graph.upstream("validate_result")).toEqual(["generate_image", "generate_caption"]);
    expect(wf.nodes.get("generate_caption")!.route).toEqual({ capability: "text_generation" });
    expect([...wf.nodes.values()].map((n) => n.input)).toEqual([undefined, undefined, undefined]);
    expect(parseWorkflow("name: w\nversion: 2\nnodes:\n  - { id: a, capability: echo }\n", "w.yaml").version).toBe("2");
    expect(parseWorkflow("name: w\nversion: '1.10'\nnodes:\n  - { id: a, capability: echo }\n", "w.yaml").version).toBe("1.10");
  });

  test("a cycle is rejected at load, naming the nodes around it and the edge that closes it", () => {
    expect(
      problems(`
name: loop
version: 1
nodes:
  - { id: a, capability: echo }
  - { id: b, capability: echo }
  - { id: c, capability: echo }
edges:
  - { from: a, to: b }
  - { from: b, to: c }
  - { from: c, to: a }
`),
    ).toEqual(['flow.yaml:10:5: node "a": edges[2]: cycle: a → b → c → a (a workflow is a DAG; use send_back on a node to send work back)']);
    expect(problems("name: self\nversion: 1\nnodes:\n  - { id: a, capability: echo }\nedges:\n  - { from: a, to: a }\n")).toEqual([
      'flow.yaml:6:5: node "a": edges[0]: cycle: a → a (a workflow is a DAG; use send_back on a node to send work back)',
    ]);
  });

  test("unknown keys, wrong types, missing keys and a node with both capability and target", () => {
    expect(
      problems(`
name: types
version: 1
owner: me
nodes:
  - id: a
    capability: echo
    timeout_ms: fast
    retries: { max: 2, jitter: 1 }
  - id: b
    capabilty: echo
  - id: c
    capability: echo
    target: echo
edges:
  - { from: a, to: b }
  - { from: b, to: c }
`),
    ).toEqual([
      'flow.yaml:3:1: owner: unknown key "owner" (expected one of: name, version, description, nodes, edges, on_failure, output)',
      'flow.yaml:7:17: node "a": nodes[0].timeout_ms: expected an integer from 1 to 86400000, got "fast"',
      'flow.yaml:8:24: node "a": nodes[0].retries.jitter: unknown key "jitter" (expected one of: max, backoff_ms, factor, max_backoff_ms)',
      'flow.yaml:10:5: node "b": nodes[1].capabilty: unknown key "capabilty" (expected one of: id, description, capability, target, input, timeout_ms, ttl_ms, retries, priority, when, on_failure, send_back)',
    ]);
    expect(problems("name: t\nversion: 1\nnodes:\n  - { id: a, capability: echo, target: echo }\n")).toEqual(['flow.yaml:4:5: node "a": nodes[0]: a node has a capability or a target, not both']);
    expect(problems("name: t\nnodes: []\n")).toEqual(["flow.yaml:1:1: version: missing required key (expected a version (number or text))", "flow.yaml:2:8: nodes: expected at least one node, got a list"]);
  });

  test("edges naming missing nodes, duplicate edges and duplicate ids", () => {
    expect(
      problems(`
name: edges
version: 1
nodes:
  - { id: a, capability: echo }
  - { id: b, capability: echo }
  - { id: b, capability: echo }
edges:
  - { from: a, to: b }
  - { from: a, to: b }
  - { from: a, to: ghost }
  - { from: spectre, to: b }
`),
    ).toEqual([
      'flow.yaml:6:11: node "b": nodes[2].id: duplicate node id "b" (first at nodes[1])',
      'flow.yaml:9:5: node "a": edges[1]: duplicate edge a → b (first at edges[0])',
      'flow.yaml:10:20: node "a": edges[2].to: edge to unknown node "ghost" (nodes: a, b)',
      'flow.yaml:11:13: node "spectre": edges[3].from: edge from unknown node "spectre" (nodes: a, b)',
    ]);
  });

  test("orphan and unreachable nodes", () => {
    expect(
      problems(`
name: parts
version: 1
nodes:
  - { id: a, capability: echo }
  - { id: b, capability: echo }
  - { id: lonely, capability: echo }
  - { id: x, capability: echo }
  - { id: y, capability: echo }
edges:
  - { from: a, to: b }
  - { from: x, to: y }
`),
    ).toEqual([
      'flow.yaml:6:11: node "lonely": nodes[2].id: orphan node: no edge leads to or from it (connect it, or name it in an on_failure)',
      'flow.yaml:7:11: node "x": nodes[3].id: unreachable: not connected to the flow that starts at "a" (nodes x, y form a separate graph)',
      'flow.yaml:8:11: node "y": nodes[4].id: unreachable: not connected to the flow that starts at "a" (nodes x, y form a separate graph)',
    ]);
  });

  test("failure branches: an unknown node, a node with edges, one branch for two nodes, fallbacks in a circle", () => {
    expect(
      problems(`
name: branches
version: 1
nodes:
  - { id: a, capability: echo, on_failure: nobody }
  - { id: b, capability: echo, on_failure: c }
  - { id: c, capability: echo }
  - { id: d, capability: echo, on_failure: f }
  - { id: e, capability: echo, on_failure: f }
  - { id: f, capability: echo, on_failure: g }
  - { id: g, capability: echo, on_failure: f }
edges:
  - { from: a, to: b }
  - { from: b, to: c }
  - { from: c, to: d }
  - { from: d, to: e }
`),
    ).toEqual([
      'flow.yaml:4:44: node "a": nodes[0].on_failure: on_failure names unknown node "nobody"',
      'flow.yaml:6:11: node "c": nodes[2].id: on_failure node "c" cannot have edges: it stands in for "b"',
      'flow.yaml:8:44: node "e": nodes[4].on_failure: node "f" is already the on_failure of "d" (one failure branch per node)',
      'flow.yaml:9:44: node "f": nodes[5].on_failure: on_failure cycle: f → g → f',
      'flow.yaml:10:44: node "g": nodes[6].on_failure: node "f" is already the on_failure of "d" (one failure branch per node)',
    ]);
  });

  test("paths and conditions: results only of upstream nodes, $.error only in failure branches, $.result only in send_back", () => {
    expect(
      problems(`
name: paths
version: 1
nodes:
  - id: a
    capability: echo
    input: { x: $.nodes.b.result, y: $.error.detail, z: $.result.ok, w: $.inptu.q }
  - id: b
    capability: echo
    when: $.nodes.a.result.go == true and (
    send_back: { when: "$.result.bad", to: [c] }
  - id: c
    capability: echo
edges:
  - { from: a, to: b }
  - { from: a, to: c }
`),
    ).toEqual([
      'flow.yaml:6:17: node "a": nodes[0].input.x: $.nodes.b.result reads node "b", which is not upstream of "a" (its result may not exist yet: add an edge)',
      'flow.yaml:6:38: node "a": nodes[0].input.y: $.error.detail: $.error is only set in an on_failure node',
      'flow.yaml:6:57: node "a": nodes[0].input.z: $.result.ok: $.result is only set in send_back (use $.nodes.<id>.result)',
      'flow.yaml:6:73: node "a": nodes[0].input.w: $.inptu.q: unknown root (expected one of $.input, $.nodes, $.feedback, $.error, $.round, $.run, $.result)',
      'flow.yaml:9:11: node "b": nodes[1].when: bad condition at position 34: the condition ends too early in "$.nodes.a.result.go == true and ("',
      'flow.yaml:10:45: node "b": nodes[1].send_back.to[0]: send_back to "c", which is not upstream of "b"',
    ]);
  });

  test("invalid YAML is reported with its position", () => {
    expect(problems("name: t\nnodes: [\n")[0]).toMatch(/^flow\.yaml:3:1: invalid YAML: /);
  });

  test("capabilities nobody provides: checked against a mesh file (module capabilities included), at the capability's line", async () => {
    const meshPath = join(ROOT, "actors/mesh.yaml");
    const meshFile = loadMeshFile(meshPath);
    const modules = await readModuleCapabilities(meshFile);
    expect(() => checkProviders(loadWorkflow(SEED), meshFileProviders(meshFile, meshPath, modules))).not.toThrow();

    const wf = parseWorkflow("name: t\nversion: 1\nnodes:\n  - id: a\n    capability: telepathy\n  - id: b\n    target: nobody\nedges:\n  - { from: a, to: b }\n", "flow.yaml");
    const small = parseMeshFile(`mesh: { name: m }\nsupervisor:\n  children:\n    - { actor: echo, module: ${join(ROOT, "actors/echo.ts")}, capabilities: [echo] }\n`, join(ROOT, "actors/m.yaml"));
    let message = "";
    try {
      checkProviders(wf, meshFileProviders(small, "m.yaml"));
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message.split("\n")).toEqual([
      'flow.yaml:5:17: node "a": nodes[0].capability: capability "telepathy" is provided by no actor in m.yaml (known: echo)',
      'flow.yaml:7:13: node "b": nodes[1].target: target "nobody" is no actor in m.yaml',
    ]);
  });
});

describe("workflow graph", () => {
  const g = new WorkflowGraph(["a", "b", "c", "d", "e"], [
    { from: "a", to: "b" },
    { from: "a", to: "c" },
    { from: "b", to: "d" },
    { from: "c", to: "d" },
  ]);

  test("topological order keeps declaration order among ready nodes; ancestors and descendants", () => {
    expect(g.topologicalOrder()).toEqual(["a", "e", "b", "c", "d"]);
    expect([...g.ancestors("d")].sort()).toEqual(["a", "b", "c"]);
    expect([...g.descendants("a")].sort()).toEqual(["b", "c", "d"]);
    expect(g.components()).toEqual([["a", "b", "c", "d"], ["e"]]);
    expect(g.findCycle()).toBeUndefined();
  });

  test("a cycle is found, and ordering refuses it", () => {
    const cyclic = new WorkflowGraph(["a", "b", "c"], [{ from: "a", to: "b" }, { from: "b", to: "c" }, { from: "c", to: "b" }]);
    expect(cyclic.findCycle()).toEqual(["b", "c", "b"]);
    expect(() => cyclic.topologicalOrder()).toThrow("cycle: b → c → b");
  });
});
