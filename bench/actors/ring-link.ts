/**
 * Bench-only actor, one link of a ring `ring0 -> ring1 -> ... -> ring0` (the chain scenario).
 * Each link forwards an event `{ left, hops, trial }` to the next link by name (`ring<i+1>`)
 * while `left > 1`, and to the ring's start (`ring0`) when it is the last: so a message of
 * n hops visits ring1 .. ring<n-1> and comes back to ring0 after exactly n hops, counting
 * them in `hops` as it goes.
 *
 * ring0 also drives: a request `{ n, hops, bytes? }` makes n sequential trips of `hops` hops
 * (2 at least, at most the ring's size) and answers `{ samples, hopsSeen, forwarded }`: the
 * time of each trip in ns (timed here), the hop count each trip arrived with, and how many
 * events this link forwarded. `{ op: "count" }` answers any link's `forwarded`.
 */
import { defineActor } from "../../src/actor/define-actor.ts";
import { payloadOf } from "../lib/payload.ts";

/** Trips waiting to come back to ring0, by trial number. */
const waiting = new Map<number, (hops: number) => void>();
let forwarded = 0;
let trials = 0;

function indexOf(name: string): number {
  const i = Number(/^ring(\d+)$/.exec(name)?.[1]);
  if (!Number.isInteger(i)) throw new Error(`ring-link: actor name must be ring<i>, got ${name}`);
  return i;
}

export default defineActor({
  // ring0 runs the driving request while the trips' last hops arrive as events (the mesh
  // file must say so too: its default of 1 overrides this).
  concurrency: 2,
  async onRequest(request, ctx) {
    if (request.payload.op === "count") return { forwarded };
    const n = Number(request.payload.n ?? 1);
    const hops = Number(request.payload.hops ?? 2);
    const data = payloadOf(Number(request.payload.bytes ?? 128)).data;
    if (indexOf(ctx.name) !== 0 || !(hops >= 2)) throw new Error(`ring-link: trips start at ring0 and take 2 hops or more (got ${ctx.name}, ${hops})`);
    const samples = new Array<number>(n);
    const hopsSeen = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const trial = ++trials;
      const back = new Promise<number>((resolve) => waiting.set(trial, resolve));
      const t = Bun.nanoseconds();
      ctx.send("ring1", { left: hops - 1, hops: 1, trial, data });
      hopsSeen[i] = await back;
      samples[i] = Bun.nanoseconds() - t;
    }
    return { samples, hopsSeen, forwarded };
  },
  onEvent(event, ctx) {
    const { left, hops, trial, data } = event.payload as { left: number; hops: number; trial: number; data: string };
    if (left === 0) {
      const resolve = waiting.get(trial);
      waiting.delete(trial);
      resolve?.(hops);
      return;
    }
    forwarded++;
    const next = left > 1 ? `ring${indexOf(ctx.name) + 1}` : "ring0";
    ctx.send(next, { left: left - 1, hops: hops + 1, trial, data });
  },
});
