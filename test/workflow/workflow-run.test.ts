/**
 * The run state machine on its own, with a scripted sender instead of a mesh: skips and their
 * propagation, stand-ins, the run failing, every transition stored before it is acted on, and
 * resuming from states a crash can leave behind.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Envelope, Payload } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { RequestSender } from "../../src/workflow/run-events.ts";
import { WorkflowEngine } from "../../src/workflow/workflow-engine.ts";
import { parseWorkflow } from "../../src/workflow/workflow-loader.ts";
import { WorkflowStore } from "../../src/workflow/workflow-store.ts";
import { tempDir } from "../helpers.ts";

/** Answers each node's requests from a script: a payload, an error, or (undefined) never. */
function scriptedSender(script: (node: string, payload: Payload) => Payload | HermesError | undefined) {
  const sent: Envelope[] = [];
  const sender: RequestSender = {
    address: "test.wf",
    pin: (env) => void (env.target_agent = `${env.capability ?? env.target_agent}#0`),
    request(envelope, options) {
      sent.push(envelope);
      const node = String(envelope.capability);
      const answer = script(node, envelope.payload);
      return new Promise((resolve, reject) => {
        options.signal.addEventListener("abort", () => reject(new HermesError(ErrorCode.TASK_TIMEOUT, "request cancelled")));
        if (answer instanceof HermesError) queueMicrotask(() => reject(answer));
        else if (answer) queueMicrotask(() => resolve({ ...envelope, payload: answer }));
      });
    },
  };
  return { sender, sent };
}

const dirs: Array<{ [Symbol.dispose](): void }> = [];
function engineWith(script: Parameters<typeof scriptedSender>[0]) {
  const dir = tempDir("hm-wf-run-");
  dirs.push(dir);
  const store = WorkflowStore.open(join(dir.path, "runs.db"));
  const { sender, sent } = scriptedSender(script);
  return { engine: new WorkflowEngine({ store, sender }), store, sent, path: join(dir.path, "runs.db"), sender };
}
afterEach(() => {
  for (const dir of dirs.splice(0)) dir[Symbol.dispose]();
});

const start = (engine: WorkflowEngine, yaml: string, input: Payload = {}, runId = "run-1") =>
  engine.start({ runId, workflow: parseWorkflow(yaml, "flow.yaml"), input, traceId: "trace-1", contextId: "ctx-1" });

describe("workflow run", () => {
  test("a false `when` skips a node; a node whose upstream were all skipped is skipped; the run still succeeds", async () => {
    const { engine, sent } = engineWith((node) => ({ from: node }));
    const run = start(engine, `
name: skips
version: 1
nodes:
  - { id: a, capability: a, when: "$.input.go == true" }
  - { id: b, capability: b }
  - { id: c, capability: c, input: { seen: $.nodes.b.result.from } }
edges:
  - { from: a, to: b }
  - { from: b, to: c }
`, { go: false });
    const done = await run.done;
    expect(done.status).toBe("succeeded");
    expect(engine.summary("run-1")!.nodes).toMatchObject({ a: { status: "skipped" }, b: { status: "skipped" }, c: { status: "skipped" } });
    expect(sent).toEqual([]);
  });

  test("every request carries the run's trace and context, its span as parent, and is pinned before it is stored", async () => {
    const { engine, sent, store } = engineWith((node) => ({ from: node }));
    await start(engine, "name: one\nversion: 1\nnodes:\n  - { id: a, capability: a, ttl_ms: 1234 }\n").done;
    expect(sent[0]).toMatchObject({ trace_id: "trace-1", context_id: "ctx-1", capability: "a", target_agent: "a#0", reply_to: "test.wf", ttl: 1234 });
    expect(sent[0]!.headers!.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(store.transitions("run-1").map((t) => `${t.node_id ?? "run"}:${t.status}`)).toEqual(["run:running", "a:running", "a:succeeded", "run:succeeded"]);
  });

  test("a stand-in whose `when` is false leaves the failure standing: the run fails with the node's error", async () => {
    const { engine } = engineWith((node) => (node === "a" ? new HermesError(ErrorCode.INTERNAL, "a broke") : { ok: true }));
    const run = start(engine, `
name: standin
version: 1
nodes:
  - { id: a, capability: a, on_failure: fix }
  - { id: fix, capability: fix, when: "$.error.error_code == 3" }
  - { id: b, capability: b }
edges:
  - { from: a, to: b }
`);
    const done = await run.done;
    expect(done.status).toBe("failed");
    expect(done.error).toMatchObject({ node: "a", error_code: 7, detail: "a broke" });
    expect(engine.summary("run-1")!.nodes).toMatchObject({ a: { status: "failed" }, fix: { status: "skipped" }, b: { status: "skipped" } });
  });

  test("resume after a crash between a node's failure and the run's: the run fails instead of hanging", async () => {
    const { store, path } = engineWith(() => undefined);
    const yaml = "name: f\nversion: 1\nnodes:\n  - { id: a, capability: a }\n  - { id: b, capability: b }\nedges:\n  - { from: a, to: b }\n";
    const first = new WorkflowEngine({ store, sender: scriptedSender(() => new HermesError(ErrorCode.INTERNAL, "boom")).sender });
    const run = start(first, yaml);
    await run.done;
    // Rewind the stored run to the moment after a's failure was stored and before the run's was.
    const stored = store.run("run-1")!;
    store.transition("run-1", store.nodes("run-1").map((n) => (n.node_id === "b" ? { ...n, status: "pending" as const } : n)), { ...stored, status: "running", error: null, finished_at: null, output: null });
    store.close();

    const reopened = WorkflowStore.open(path);
    const again = new WorkflowEngine({ store: reopened, sender: scriptedSender(() => ({ never: true })).sender });
    const [resumed] = again.resumeAll();
    const done = await resumed!.done;
    expect(done.status).toBe("failed");
    expect(done.error).toMatchObject({ node: "a", detail: "boom" });
    reopened.close();
  });

  test("resume sends the stored envelope again: same message_id, next attempt, fresh ttl", async () => {
    const { store, path } = engineWith(() => undefined); // never answers: the node stays in flight
    start(new WorkflowEngine({ store, sender: scriptedSender(() => undefined).sender }), "name: r\nversion: 1\nnodes:\n  - { id: a, capability: a, timeout_ms: 60000 }\n");
    const inFlight = store.nodes("run-1")[0]!;
    expect(inFlight.status).toBe("running");
    store.close();

    const reopened = WorkflowStore.open(path);
    const replay = scriptedSender((node) => ({ from: node }));
    const [resumed] = new WorkflowEngine({ store: reopened, sender: replay.sender }).resumeAll();
    expect((await resumed!.done).status).toBe("succeeded");
    expect(replay.sent).toHaveLength(1);
    expect(replay.sent[0]).toMatchObject({ message_id: inFlight.message_id, attempt: 2, ttl: 60000, target_agent: "a#0" });
    expect(reopened.transitions("run-1").map((t) => `${t.node_id}:${t.status}`)).toContain("a:resent");
    reopened.close();
  });
});
