/**
 * Durable runs with real `kill -9`: the orchestrator killed mid-run restarts, resumes the run
 * from its store and finishes it; nodes that had finished are not run again, and nodes that were
 * in flight are requested again with the same message_id, to the same instance of their pool,
 * so their actors run them once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { MeshClient } from "../../src/actor/connect-mesh.ts";
import type { Payload } from "../../mesh/envelope.ts";
import { waitFor } from "../helpers.ts";
import type { TestMesh } from "../actor/mesh-harness.ts";
import { runFlow, startWorkflowMesh, stats } from "./workflow-harness.ts";

/** The parallel pair then the join, with each stage's work time set by the input. */
const FLOW = `
name: crashy
version: 1
nodes:
  - { id: image, capability: image_generation, input: { prompt: $.input.prompt, delay_ms: $.input.branch_ms } }
  - { id: caption, capability: caption_generation, input: { prompt: $.input.prompt, delay_ms: $.input.branch_ms } }
  - id: validate
    capability: content_validation
    input: { image: $.nodes.image.result.image, caption: $.nodes.caption.result.caption, max_caption_chars: 500, delay_ms: $.input.join_ms }
    retries: 1
edges:
  - { from: image, to: validate }
  - { from: caption, to: validate }
`;

describe("orchestrator killed with SIGKILL mid-run", () => {
  let t: TestMesh;
  let client: MeshClient;
  beforeAll(async () => {
    // Two instances of each generator: a request sent again must reach the instance that has it.
    t = await startWorkflowMesh("wf-crash", 2);
    client = await t.client();
  });
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  /** Kills the orchestrator once `ready()` holds for the run's progress, and waits to see it down. */
  async function killWhen(progress: Payload[], ready: (p: Payload[]) => boolean, what: string): Promise<void> {
    await waitFor(() => ready(progress), what, 10_000);
    const restarts = t.mesh.registry.byAddress("orchestrator")!.restarts;
    process.kill(t.pid("orchestrator"), "SIGKILL");
    await waitFor(() => t.mesh.registry.byAddress("orchestrator")!.restarts > restarts, "the orchestrator to be restarted", 10_000);
  }

  const statusOf = async (runId: string) => (await client.request("orchestrator", { op: "status", run_id: runId }, { timeoutMs: 5000 })).payload;

  test("killed while the join is in flight: the run finishes, the branches are not run again, the join runs once", async () => {
    const progress: Payload[] = [];
    const pending = runFlow(client, FLOW, { prompt: "a kite over dunes", branch_ms: 50, join_ms: 1500 }, (p) => progress.push(p), 30_000);
    await killWhen(progress, (ps) => ps.some((p) => p.type === "node" && p.node === "validate" && p.status === "running"), "the join to be running");
    const run = await pending; // the request is redelivered to the restarted orchestrator, which attaches to the resumed run
    expect(run.error).toBeUndefined();
    const runId = run.answer!.run_id as string;
    expect(run.answer).toMatchObject({ status: "succeeded", nodes: { image: { requests: 1 }, caption: { requests: 1 }, validate: { requests: 1, attempt: 1 } } });
    expect(run.progress).toContainEqual(expect.objectContaining({ type: "run", run_id: runId, resumed: true }));
    for (const actor of ["image-gen", "caption-gen", "validator"]) expect((await stats(client, actor, runId)).executions).toBe(1);
    // The history: the join's request was sent again after the restart, with the same message_id.
    const transitions = (await statusOf(runId)).transitions as Payload[];
    const sent = transitions.find((x) => x.node_id === "validate" && x.status === "running")!;
    expect(transitions).toContainEqual(expect.objectContaining({ node_id: "validate", status: "resent", message_id: sent.message_id }));
    expect(transitions.filter((x) => x.node_id === "image" && x.status === "running")).toHaveLength(1);
  }, 30_000);

  test("killed while both branches are in flight: each branch still runs once, then the join", async () => {
    const progress: Payload[] = [];
    const pending = runFlow(client, FLOW, { prompt: "a lantern in fog", branch_ms: 1200, join_ms: 20 }, (p) => progress.push(p), 30_000);
    await killWhen(progress, (ps) => new Set(ps.filter((p) => p.type === "node_progress").map((p) => p.node)).size === 2, "both branches to be working");
    const run = await pending;
    expect(run.error).toBeUndefined();
    const runId = run.answer!.run_id as string;
    for (const actor of ["image-gen", "caption-gen", "validator"]) expect((await stats(client, actor, runId)).executions).toBe(1);
    const out = run.answer!.output as Record<string, Payload>;
    expect(out.validate).toMatchObject({ valid: true, execution: 1 });
    expect(out.image!.execution).toBe(1);
    expect(out.caption!.execution).toBe(1);
  }, 30_000);

  test("killed twice, between and during nodes, with a retry waiting: still one execution per attempt needed", async () => {
    const progress: Payload[] = [];
    // The join fails once (fail_times) and is retried after its backoff; the kills land around it.
    const flow = FLOW.replace("max_caption_chars: 500,", "max_caption_chars: 500, fail_times: 1,").replace("retries: 1", "retries: { max: 1, backoff_ms: 1500 }");
    const pending = runFlow(client, flow, { prompt: "a clock tower", branch_ms: 400, join_ms: 300 }, (p) => progress.push(p), 30_000);
    await killWhen(progress, (ps) => ps.some((p) => p.type === "node_progress" && p.node === "image"), "the branches to start");
    await killWhen(progress, (ps) => ps.some((p) => p.type === "node" && p.node === "validate" && p.status === "retry_wait"), "the join to wait for its retry");
    const run = await pending;
    expect(run.error).toBeUndefined();
    const runId = run.answer!.run_id as string;
    expect(run.answer!.nodes).toMatchObject({ validate: { status: "succeeded", attempt: 2, requests: 2 } });
    expect((await stats(client, "validator", runId)).executions).toBe(2); // the failure and the retry, nothing more
    for (const actor of ["image-gen", "caption-gen"]) expect((await stats(client, actor, runId)).executions).toBe(1);
  }, 30_000);
});
