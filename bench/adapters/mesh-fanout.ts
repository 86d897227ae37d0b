/**
 * Fan-out contender: a real mesh with a publisher actor (bench/actors/fan-publisher.ts) and
 * subscriber actors sub0 .. sub<size-1> (bench/actors/fan-subscriber.ts), each its own
 * process. Subscriber i subscribes to `fan.n<N>` for every audience N above i, so publishing
 * on `fan.n4` reaches sub0 .. sub3 through the registry's topic routing, one envelope per
 * subscriber. The publisher times everything itself and answers the harness with the samples.
 */
import { startBenchMesh } from "../lib/mesh.ts";
import type { FanoutPeer, FanoutSession } from "./types.ts";

/** The audiences a mesh of this adapter can publish to. */
export const AUDIENCES = [1, 4, 16] as const;

export const topicFor = (subscribers: number) => `fan.n${subscribers}`;

/** Publisher first (concurrency 2: the driving request, and the reports as events), then the subscribers. */
export function fanoutMeshYaml(name: string, size: number, audiences: readonly number[] = AUDIENCES): string {
  const subs = Array.from({ length: size }, (_, i) => {
    const topics = audiences.filter((n) => i < n).map((n) => `"${topicFor(n)}"`);
    return `    - { actor: sub${i}, module: "{BENCH_ACTORS}/fan-subscriber.ts", subscribe: [${topics.join(", ")}] }`;
  });
  return `mesh: { name: ${name} }
supervisor:
  children:
    - { actor: fanpub, module: "{BENCH_ACTORS}/fan-publisher.ts", concurrency: 2 }
${subs.join("\n")}
`;
}

const BATCH_TIMEOUT_MS = 120_000;

export const meshFanout: FanoutPeer = {
  name: "actor publish",
  async open({ size }): Promise<FanoutSession> {
    // The audiences that fit (a smaller mesh, for tests, gets the smaller ones and its own size).
    const audiences = [...new Set([...AUDIENCES.filter((n) => n < size), size])];
    const mesh = await startBenchMesh(fanoutMeshYaml(`fan-${Math.random().toString(36).slice(2, 8)}`, size, audiences));
    try {
      const client = await mesh.client();
      const ask = async (payload: Record<string, unknown>) => (await client.request("fanpub", payload, { timeoutMs: BATCH_TIMEOUT_MS })).payload;
      const audience = (subscribers: number) => {
        if (!audiences.includes(subscribers)) throw new RangeError(`actor fan-out of ${size}: no topic for ${subscribers} subscribers`);
        return { topic: topicFor(subscribers), subscribers };
      };
      return {
        pids: [mesh.pid("fanpub"), ...Array.from({ length: size }, (_, i) => mesh.pid(`sub${i}`))],
        async latency(n, subscribers) {
          const r = await ask({ op: "latency", n, ...audience(subscribers) });
          return { delivered: r.delivered as number[], reported: r.reported as number[], duplicates: Number(r.duplicates), reporters: r.reporters as string[] };
        },
        async burst(k, subscribers) {
          const r = await ask({ op: "burst", k, ...audience(subscribers) });
          if (Number(r.duplicates) > 0) throw new Error(`actor fan-out: ${r.duplicates} duplicate burst reports`);
          return { ns: Number(r.ns), counts: r.counts as number[] };
        },
        [Symbol.asyncDispose]: () => mesh[Symbol.asyncDispose](),
      };
    } catch (error) {
      await mesh[Symbol.asyncDispose]();
      throw error;
    }
  },
};
