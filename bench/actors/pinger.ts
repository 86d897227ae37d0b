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
 * `{ op: "events", n, target }` sends n 128-byte events to the target (a sink:
 * bench/actors/sink.ts), awaiting `ctx.send` as a producer does, then asks the sink its count
 * and answers `{ count }`; `{ op: "pipelined", n, outstanding, target }` makes n requests with
 * `outstanding` in flight and answers `{ answered }`. The actor → actor stream contenders.
 */
import { defineActor } from "../../src/actor/define-actor.ts";
import { closedLoopRate, runOpenLoop } from "../lib/open-loop.ts";
import { PAYLOAD_128, payloadOf } from "../lib/payload.ts";

const payloads = new Map<number, Record<string, unknown>>();
/** A nanosecond clock on either runtime (the pinger also runs on Deno: the deno scenario). */
const nanoseconds = typeof Bun !== "undefined" ? () => Bun.nanoseconds() : () => Number(process.hrtime.bigint());

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
    if (request.payload.op === "events") {
      const n = Number(request.payload.n);
      for (let i = 0; i < n; i++) await ctx.send(target, PAYLOAD_128);
      return await ctx.request(target, { op: "count" });
    }
    if (request.payload.op === "pipelined") {
      const n = Number(request.payload.n);
      let started = 0;
      let answered = 0;
      const lane = async () => {
        while (started < n) {
          started++;
          await ctx.request(target, PAYLOAD_128);
          answered++;
        }
      };
      await Promise.all(Array.from({ length: Math.min(Number(request.payload.outstanding), n) }, lane));
      return { answered };
    }
    const n = Number(request.payload.n ?? 1);
    const bytes = Number(request.payload.bytes ?? 128);
    let payload = payloads.get(bytes);
    if (!payload) payloads.set(bytes, (payload = payloadOf(bytes)));
    const samples = new Array<number>(n);
    let t = nanoseconds();
    for (let i = 0; i < n; i++) {
      await ctx.request(target, payload);
      const now = nanoseconds();
      samples[i] = now - t;
      t = now;
    }
    return { samples };
  },
});
