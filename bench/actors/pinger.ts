/**
 * Bench-only actor: on a request `{ n, target?, bytes? }` it makes n sequential
 * `ctx.request(target, payload)` round trips (default target "echo", payload 128 bytes, or
 * `bytes` long: bench/lib/payload.ts) and answers `{ samples }`, the latency of each in
 * nanoseconds, timed here. So the hop measured is actor to actor through the whole runtime:
 * handler context, envelope, routing, link, the peer's dedupe, mailbox and handler, and the
 * answer back.
 * `{ op: "open", rate, durationMs }` runs an open-loop load of 128-byte requests at that
 * offered rate (bench/lib/open-loop.ts) and answers its counts and histograms (encoded);
 * `{ op: "closed", concurrency, ms }` answers `{ rate }` with that many requests kept outstanding.
 */
import { defineActor } from "../../src/actor/define-actor.ts";
import { closedLoopRate, runOpenLoop } from "../lib/open-loop.ts";
import { PAYLOAD_128, payloadOf } from "../lib/payload.ts";

const payloads = new Map<number, Record<string, unknown>>();

export default defineActor({
  capabilities: ["bench.pinger"],
  async onRequest(request, ctx) {
    const target = String(request.payload.target ?? "echo");
    if (request.payload.op === "open") {
      const r = await runOpenLoop(() => ctx.request(target, PAYLOAD_128), { rate: Number(request.payload.rate), durationMs: Number(request.payload.durationMs) });
      return { ...r, fromScheduled: r.fromScheduled.encode(), fromSent: r.fromSent.encode(), sendLag: r.sendLag.encode() };
    }
    if (request.payload.op === "closed") {
      return { rate: await closedLoopRate(() => ctx.request(target, PAYLOAD_128), Number(request.payload.concurrency), Number(request.payload.ms)) };
    }
    const n = Number(request.payload.n ?? 1);
    const bytes = Number(request.payload.bytes ?? 128);
    let payload = payloads.get(bytes);
    if (!payload) payloads.set(bytes, (payload = payloadOf(bytes)));
    const samples = new Array<number>(n);
    let t = Bun.nanoseconds();
    for (let i = 0; i < n; i++) {
      await ctx.request(target, payload);
      const now = Bun.nanoseconds();
      samples[i] = now - t;
      t = now;
    }
    return { samples };
  },
});
