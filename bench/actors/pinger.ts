/**
 * Bench-only actor: on a request `{ n, target?, bytes? }` it makes n sequential
 * `ctx.request(target, payload)` round trips (default target "echo", payload 128 bytes, or
 * `bytes` long: bench/lib/payload.ts) and answers `{ samples }`, the latency of each in
 * nanoseconds, timed here. So the hop measured is actor to actor through the whole runtime:
 * handler context, envelope, routing, link, the peer's dedupe, mailbox and handler, and the
 * answer back.
 */
import { defineActor } from "../../src/actor/define-actor.ts";
import { payloadOf } from "../lib/payload.ts";

const payloads = new Map<number, Record<string, unknown>>();

export default defineActor({
  capabilities: ["bench.pinger"],
  async onRequest(request, ctx) {
    const n = Number(request.payload.n ?? 1);
    const target = String(request.payload.target ?? "echo");
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
