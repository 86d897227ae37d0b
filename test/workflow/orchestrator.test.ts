/**
 * The orchestrator with real actor processes: parallel branches that overlap in time, retries
 * then the failure branch, work sent back by the validator (bounded), a run that fails and
 * cancels what still runs, cancel reaching running nodes, providers checked at run start,
 * one trace per run, and 100 concurrent runs with none lost or doubled.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { MeshClient } from "../../src/actor/connect-mesh.ts";
import type { Payload } from "../../mesh/envelope.ts";
import { readTrace, type Span } from "../../src/observability/trace-tree.ts";
import { waitFor } from "../helpers.ts";
import type { TestMesh } from "../actor/mesh-harness.ts";
import { runFlow, runIdOf, SEED, startWorkflowMesh, stats } from "./workflow-harness.ts";

const PARALLEL = `
name: parallel
version: 2
nodes:
  - { id: image, capability: image_generation, input: { prompt: $.input.prompt, delay_ms: 300 } }
  - { id: caption, capability: caption_generation, input: { prompt: $.input.prompt, delay_ms: 300 } }
  - id: validate
    capability: content_validation
    input: { image: $.nodes.image.result.image, caption: $.nodes.caption.result.caption, max_caption_chars: 500, delay_ms: 0 }
edges:
  - { from: image, to: validate }
  - { from: caption, to: validate }
`;

describe("orchestrator", () => {
  let t: TestMesh;
  let client: MeshClient;
  beforeAll(async () => {
    t = await startWorkflowMesh("wf-orchestrator");
    client = await t.client();
  });
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  test("independent nodes run in parallel (their work overlaps in time); the join starts after both; one trace and context", async () => {
    const run = await runFlow(client, PARALLEL, { prompt: "a heron at dawn" });
    expect(run.error).toBeUndefined();
    const out = run.answer!.output as Record<string, Payload>;
    const [image, caption, validate] = [out.image!, out.caption!, out.validate!];
    const starts = [image.started_at as number, caption.started_at as number];
    const ends = [image.ended_at as number, caption.ended_at as number];
    expect(Math.max(...starts)).toBeLessThan(Math.min(...ends)); // both were working at the same time
    expect(validate.started_at as number).toBeGreaterThanOrEqual(Math.max(...ends));
    expect(validate.valid).toBe(true);

    // The run shares one context: each actor saw exactly one execution under the run's id.
    const runId = run.answer!.run_id as string;
    expect(run.answer!.context_id).toBe(runId);
    for (const actor of ["image-gen", "caption-gen", "validator"]) expect((await stats(client, actor, runId)).executions).toBe(1);

    // And one trace: run → node → the actor that handled its request, from the event logs.
    const traceId = run.answer!.trace_id as string;
    let roots: Span[] = [];
    await waitFor(() => (roots = readTrace(t.dir, traceId)).length === 1 && roots[0]!.children.length === 3 && roots[0]!.children.every((c) => c.children.length === 1), "the run's trace tree in the event logs");
    expect(roots[0]).toMatchObject({ actor: "orchestrator", type: "request" });
    // The two parallel branches may start in either order; the join comes last.
    const children = roots[0]!.children;
    expect(children.map((c) => c.label).slice(0, 2).sort()).toEqual([
      "node caption → capability:caption_generation (succeeded)",
      "node image → capability:image_generation (succeeded)",
    ]);
    expect(children[2]!.label).toBe("node validate → capability:content_validation (succeeded)");
    expect(children.map((c) => c.children[0]!.actor).slice(0, 2).sort()).toEqual(["caption-gen", "image-gen"]);
    expect(children[2]!.children[0]!.actor).toBe("validator");
  });

  test("the seed workflow: the validator sends only the caption back once; its second draft passes", async () => {
    const run = await runFlow(client, SEED, { prompt: "a red fox in the snow", delay_ms: 20 });
    expect(run.error).toBeUndefined();
    expect(run.answer!.output).toMatchObject({ image: expect.stringMatching(/^image:\/\/a-red-fox-in-the-snow-[0-9a-f]{10}\.png$/), caption: "A red fox in the snow.", rounds: 2 });
    expect(run.answer!.nodes).toMatchObject({
      image: { status: "succeeded", requests: 1 },
      caption: { status: "succeeded", round: 2, requests: 2 },
      validate: { status: "succeeded", round: 2, requests: 2 },
      placeholder_image: { status: "skipped", requests: 0 },
    });
    expect(run.progress).toContainEqual(expect.objectContaining({ type: "send_back", node: "validate", to: ["caption"], round: 2 }));
  });

  test("sending back is bounded: a validator that never passes fails its node after max_rounds, and the run", async () => {
    const strict = SEED.replace("max_caption_chars: 80", "max_caption_chars: 5");
    const run = await runFlow(client, strict, { prompt: "a red fox in the snow", delay_ms: 5 });
    expect(run.error?.code).toBe(2);
    expect(run.error?.message).toMatch(/failed at node "validate": node "validate" still sends the work back after 3 round\(s\)/);
    expect(run.error?.fields.nodes).toMatchObject({ caption: { status: "succeeded", round: 3, requests: 3 }, validate: { status: "failed", round: 3 } });
  });

  test("a failing node is retried with backoff, then its failure branch stands in for it and the run goes on", async () => {
    const run = await runFlow(client, SEED, { prompt: "a storm over the sea", image_failures: 99, delay_ms: 5 });
    expect(run.error).toBeUndefined();
    expect(run.answer!.output).toMatchObject({ image: "image://placeholder.png", caption: "A storm over the sea." });
    expect(run.answer!.nodes).toMatchObject({ image: { status: "failed", attempt: 3, requests: 3 }, placeholder_image: { status: "succeeded", requests: 1 } });
    const waits = run.progress.filter((p) => p.type === "node" && p.node === "image" && p.status === "retry_wait").map((p) => p.retry_in_ms);
    expect(waits).toEqual([50, 100]); // backoff_ms 50, factor 2
    const runId = run.answer!.run_id as string;
    expect((await stats(client, "image-gen", runId)).executions).toBe(4); // three attempts and the placeholder
    expect((run.answer!.output as Payload).validation).toMatchObject({ valid: true, note: "placeholder image" });
  });

  test("a failure nothing stands in for fails the run: running nodes are cancelled, the flow's on_failure runs", async () => {
    const flow = `
name: fragile
version: 1
nodes:
  - { id: slow, capability: image_generation, input: { prompt: $.input.prompt, delay_ms: 20000 } }
  - { id: broken, capability: caption_generation, input: { prompt: $.input.prompt, fail_times: 99 }, retries: { max: 1, backoff_ms: 10 } }
  - { id: join, capability: content_validation, input: { image: $.nodes.slow.result.image } }
  - { id: report, target: image-gen, input: { placeholder: true, reason: $.error.detail } }
edges:
  - { from: slow, to: join }
  - { from: broken, to: join }
on_failure: report
`;
    const before = await stats(client, "image-gen");
    const run = await runFlow(client, flow, { prompt: "a glass bridge" });
    expect(run.error?.code).toBe(7);
    expect(run.error?.message).toMatch(/failed at node "broken": caption generation failed \(simulated failure 2 of 99\)/);
    expect(run.error?.fields.nodes).toMatchObject({
      slow: { status: "cancelled" },
      broken: { status: "failed", attempt: 2 },
      join: { status: "skipped" },
      report: { status: "succeeded" },
    });
    // The cancel reached the slow node's handler, which stopped its work.
    await waitFor(async () => (await stats(client, "image-gen")).cancelled > before.cancelled, "image-gen to see the cancel");
  });

  test("a run can be cancelled: the cancel reaches its running nodes, and the run answers code 3", async () => {
    const before = { image: await stats(client, "image-gen"), caption: await stats(client, "caption-gen") };
    let runId = "";
    const working = new Set<string>();
    const pending = runFlow(client, SEED, { prompt: "a very long task", delay_ms: 20000 }, (p) => {
      if (p.type === "run") runId = p.run_id as string;
      if (p.type === "node_progress") working.add(p.node as string);
    });
    await waitFor(() => working.size === 2, "both branches to be working");
    const cancelled = (await client.request("orchestrator", { op: "cancel", run_id: runId })).payload;
    expect(cancelled).toMatchObject({ run_id: runId, status: "cancelled", nodes: { image: { status: "cancelled" }, caption: { status: "cancelled" }, validate: { status: "skipped" } } });
    const run = await pending;
    expect(run.error?.code).toBe(3);
    expect(run.error?.message).toBe(`run ${runId} cancelled: cancelled by request`);
    // Both handlers were told: their work stopped early (cancel envelopes through the mesh).
    await waitFor(async () => (await stats(client, "image-gen")).cancelled === before.image.cancelled + 1 && (await stats(client, "caption-gen")).cancelled === before.caption.cancelled + 1, "both running nodes to see the cancel");
    // Cancelling again changes nothing; an unknown run is code 2.
    expect((await client.request("orchestrator", { op: "cancel", run_id: runId })).payload.status).toBe("cancelled");
    expect(await client.request("orchestrator", { op: "cancel", run_id: "nope" }).catch((e) => e.code)).toBe(2);
  });

  test("a capability nobody in the running mesh provides is refused at run start, at its line", async () => {
    const run = await runFlow(client, "name: t\nversion: 1\nnodes:\n  - id: a\n    capability: telepathy\n", {});
    expect(run.error?.code).toBe(2);
    expect(run.error?.message).toBe('flow.yaml:5:17: node "a": nodes[0].capability: capability "telepathy" is provided by no actor in the running mesh (known: caption_generation, content_validation, image_generation, text_generation, workflow)');
  });

  test("100 concurrent runs all complete, none lost, none doubled, none mixed up", async () => {
    const before = { image: await stats(client, "image-gen"), caption: await stats(client, "caption-gen"), validator: await stats(client, "validator") };
    const runs = await Promise.all(Array.from({ length: 100 }, (_, i) => runFlow(client, SEED, { prompt: `fox number ${i}`, delay_ms: 10 }, undefined, 60_000)));
    expect(runs.filter((r) => r.error).map((r) => r.error!.message)).toEqual([]);
    expect(new Set(runs.map((r) => r.answer!.run_id)).size).toBe(100);
    runs.forEach((r, i) => expect(r.answer!.output).toMatchObject({ caption: `Fox number ${i}.`, rounds: 2 }));
    // Exactly the executions 100 runs need: one image, two captions and two validations each.
    expect((await stats(client, "image-gen")).started - before.image.started).toBe(100);
    expect((await stats(client, "caption-gen")).started - before.caption.started).toBe(200);
    expect((await stats(client, "validator")).started - before.validator.started).toBe(200);
    const listed = (await client.request("orchestrator", { op: "runs", status: "succeeded", limit: 1000 })).payload.runs as Payload[];
    const ids = new Set(listed.map((r) => r.run_id));
    for (const r of runs) expect(ids.has(r.answer!.run_id)).toBe(true);
  }, 60_000);
});
