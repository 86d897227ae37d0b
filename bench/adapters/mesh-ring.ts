/**
 * Chain contender: a ring of actors (bench/actors/ring-link.ts), each its own process of a
 * real mesh, ring0 driving: this process asks ring0 for n trips of `hops` hops; ring0 sends
 * an event to ring1, each link forwards it by name to the next, the last back to ring0, and
 * ring0 times each trip. Every hop is a whole actor path: `ctx.send`, routing, link, the
 * receiver's dedupe, mailbox and handler, and the ack back.
 */
import { startBenchMesh } from "../lib/mesh.ts";
import type { RingPeer, RingSession } from "./types.ts";

/**
 * A mesh of `size` ring links, ring0 first. ring0 needs a concurrency of 2 (the driving
 * request and the trips coming back); the mesh file's default of 1 overrides the module's.
 */
export function ringMeshYaml(name: string, size: number): string {
  const children = Array.from({ length: size }, (_, i) => `    - { actor: ring${i}, module: "{BENCH_ACTORS}/ring-link.ts"${i === 0 ? ", concurrency: 2" : ""} }`);
  return `mesh: { name: ${name} }\nsupervisor:\n  children:\n${children.join("\n")}\n`;
}

/** Harness-side patience per batch: generous, ring0 reports its own timings. */
const BATCH_TIMEOUT_MS = 120_000;

export const meshRing: RingPeer = {
  name: "actor ring",
  async open({ size }): Promise<RingSession> {
    const mesh = await startBenchMesh(ringMeshYaml(`ring-${Math.random().toString(36).slice(2, 8)}`, size));
    try {
      const client = await mesh.client();
      const names = Array.from({ length: size }, (_, i) => `ring${i}`);
      return {
        pids: names.map((name) => mesh.pid(name)),
        async trips(n, hops) {
          if (!(hops >= 2 && hops <= size)) throw new RangeError(`actor ring of ${size}: cannot make a trip of ${hops} hops`);
          const reply = await client.request("ring0", { n, hops }, { timeoutMs: BATCH_TIMEOUT_MS });
          const { samples, hopsSeen } = reply.payload as { samples?: number[]; hopsSeen?: number[] };
          if (!Array.isArray(samples) || samples.length !== n || !Array.isArray(hopsSeen)) throw new Error(`ring0 answered ${Array.isArray(samples) ? samples.length : "no"} samples for ${n} trips`);
          return { samples, hopsSeen };
        },
        async forwarded() {
          const replies = await Promise.all(names.map((name) => client.request(name, { op: "count" }, { timeoutMs: 5000 })));
          return replies.map((r) => Number(r.payload.forwarded));
        },
        [Symbol.asyncDispose]: () => mesh[Symbol.asyncDispose](),
      };
    } catch (error) {
      await mesh[Symbol.asyncDispose]();
      throw error;
    }
  },
};
