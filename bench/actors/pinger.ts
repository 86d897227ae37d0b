/**
 * Bench-only actor: on a request `{ n, target? }` it makes n sequential `ctx.request(target,
 * 128-byte payload)` round trips (default target "echo") and answers `{ samples }`, the
 * latency of each in nanoseconds, timed here. So the hop measured is actor to actor through
 * the whole runtime: handler context, envelope, routing, link, the peer's dedupe, mailbox and
 * handler, and the answer back.
 */
import { defineActor } from "../../src/actor/define-actor.ts";
import { PAYLOAD_128 } from "../lib/payload.ts";

export default defineActor({
  capabilities: ["bench.pinger"],
  async onRequest(request, ctx) {
    const n = Number(request.payload.n ?? 1);
    const target = String(request.payload.target ?? "echo");
    const samples = new Array<number>(n);
    let t = Bun.nanoseconds();
    for (let i = 0; i < n; i++) {
      await ctx.request(target, PAYLOAD_128);
      const now = Bun.nanoseconds();
      samples[i] = now - t;
      t = now;
    }
    return { samples };
  },
});
