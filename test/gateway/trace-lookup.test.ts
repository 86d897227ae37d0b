/**
 * Trace lookups over a large event log must not block the gateway: a real mesh, its gateway
 * process, two 63 MiB files of JSON Lines written into its logs dir, four concurrent `/api/trace/:id`
 * calls while `/health` is polled. Asserts that /health stays under a bound and that the lookup
 * finds the right spans; the lookup's own speed is printed, never asserted.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { readTrace } from "../../src/observability/trace-tree.ts";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";
import { waitFor } from "../helpers.ts";

/** Starting a mesh takes about a second; on a loaded 2-core machine it can take longer than bun's 5 s hook default. */
const START_MS = 30_000;
const MESH = `
mesh:
  name: trace-big
supervisor:
  children:
    - actor: calculator
      module: {ACTORS}/calculator.ts
`;
const TRACE = "big-trace-7f3a";
/** /health must answer within this while the lookups run (it took seconds when they blocked). */
const HEALTH_BOUND_MS = 100;
const FILE_BYTES = 64 * 1024 * 1024;

const span = (fields: Record<string, unknown>) =>
  `${JSON.stringify({ ts: 1, actor: "worker", event: "handled", type: "request", trace_id: TRACE, status: "ok", duration_ms: 1, ...fields })}\n`;

/** About `bytes` of handled/sent lines of other traces, built from one repeated block. */
function filler(bytes: number): Buffer {
  const lines: string[] = [];
  for (let i = 0; i < 4000; i++) {
    const trace = `other-${(i * 7919).toString(36)}`;
    lines.push(JSON.stringify({ ts: 1_700_000_000_000 + i, actor: "worker", event: i % 3 ? "handled" : "sent", type: "request", trace_id: trace, message_id: `01J${i.toString(36).padStart(23, "0")}`, span_id: (i * 104729).toString(16).padStart(16, "0"), parent_span_id: "00f067aa0ba902b7", started_at: 1_700_000_000_000 + i, duration_ms: 0.25, status: "ok", attempt: 1 }));
  }
  const block = Buffer.from(`${lines.join("\n")}\n`);
  const out = Buffer.allocUnsafe(Math.floor(bytes / block.length) * block.length);
  for (let at = 0; at < out.length; at += block.length) block.copy(out, at);
  return out;
}

describe("trace lookups on 126 MiB of event logs", () => {
  let t: TestMesh;
  let url: string;
  beforeAll(async () => {
    t = await startTestMesh(MESH, { gateway: { port: 0 } });
    url = t.mesh.gateway!.url;
    // A real request with the trace id: the gateway's and the calculator's spans, in their own logs.
    const answer = await fetch(`${url}/hermes/v1/invoke`, {
      method: "POST",
      headers: { "content-type": "application/hermes+json" },
      body: JSON.stringify({ meta: { version: "1.2", msg_type: 1, sender_id: "a", receiver_id: "calculator", ttl: 30, trace_id: TRACE }, payload: { expression: "2+2" } }),
    });
    expect(((await answer.json()) as any).payload.result).toBe(4);
    await waitFor(() => readTrace(t.dir, TRACE)[0]?.children.length === 1, "the gateway's and the calculator's spans in the logs");
    // Two rotated-shape files of filler, with a worker's spans of the trace at the start, the middle and the end.
    const half = filler(FILE_BYTES / 2);
    const logs = join(t.dir, "logs");
    await Bun.write(join(logs, "worker.1.jsonl"), Buffer.concat([Buffer.from(span({ span_id: "a1", message_id: "m1", started_at: 5000 })), half, Buffer.from(span({ span_id: "b2", parent_span_id: "a1", message_id: "m2", started_at: 5001 })), half]));
    await Bun.write(join(logs, "worker.jsonl"), Buffer.concat([half, half, Buffer.from(span({ span_id: "c3", parent_span_id: "b2", message_id: "m3", started_at: 5002, status: "error", error_code: 3 }))]));
  }, START_MS);
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  test("four concurrent lookups find the spans while /health stays fast", async () => {
    let lookupsDone = false;
    const healthMs: number[] = [];
    const poll = (async () => {
      while (!lookupsDone) {
        const t0 = performance.now();
        const response = await fetch(`${url}/health`);
        expect(response.status).toBe(200);
        await response.arrayBuffer();
        healthMs.push(performance.now() - t0);
      }
    })();
    const lookup = async () => {
      const t0 = performance.now();
      const response = await fetch(`${url}/api/trace/${TRACE}`);
      const view = (await response.json()) as any;
      return { status: response.status, view, ms: performance.now() - t0 };
    };
    let results;
    try {
      results = await Promise.all([lookup(), lookup(), lookup(), lookup()]);
    } finally {
      lookupsDone = true;
      await poll;
    }
    const max = Math.max(...healthMs);
    console.log(`trace lookups over ${(results[0]!.view.scanned_bytes / 1024 / 1024).toFixed(0)} MiB: ${results.map((r) => r.ms.toFixed(0)).join(", ")} ms; /health polled ${healthMs.length} times, max ${max.toFixed(1)} ms`);
    for (const { status, view } of results) {
      expect(status).toBe(200);
      expect(view.truncated).toBe(false);
      const roots = view.spans as any[];
      const gateway = roots.find((r) => r.actor === "gateway");
      expect(gateway.children.map((c: any) => c.actor)).toEqual(["calculator"]);
      const worker = roots.find((r) => r.actor === "worker");
      expect(worker.span_id).toBe("a1");
      expect(worker.children[0].span_id).toBe("b2");
      expect(worker.children[0].children[0]).toMatchObject({ span_id: "c3", status: "error", error_code: 3 });
      expect(view.text).toContain(`trace ${TRACE}: 5 span(s) in 3 actor(s)`);
    }
    expect(healthMs.length).toBeGreaterThan(3);
    expect(max).toBeLessThan(HEALTH_BOUND_MS);
  }, 30_000);

  test("a lookup that runs out of time answers with what it has, flagged truncated", async () => {
    const view = (await (await fetch(`${url}/api/trace/${TRACE}?timeout_ms=0`)).json()) as any;
    expect(view).toMatchObject({ trace_id: TRACE, truncated: true, reason: "deadline of 0 ms" });
    expect(view.scanned_bytes).toBeLessThan(2 * FILE_BYTES);
    expect(view.text).toContain("(partial: the lookup stopped early, deadline of 0 ms)");
  });
});
