/**
 * Bench-only actor, the publisher of the fan-out scenario. Requests:
 * - `{ op: "latency", topic, subscribers, n }`: n sequential publications of a 128-byte
 *   payload on `topic`, each waited for until every one of the `subscribers` reported it back.
 *   Answers `{ delivered, reported, duplicates }`: per publication, ns from the publish to the
 *   last subscriber's arrival (machine-wide clock) and to the last report back here, and how
 *   many reports came from a subscriber that had already reported that publication; and
 *   `reporters`, who reported the last publication.
 * - `{ op: "burst", topic, subscribers, k }`: k publications back to back, then waits for every
 *   subscriber's report of the last. Answers `{ ns, deliveredNs, counts }`: ns to the last
 *   report, ns to the last subscriber's arrival of the last publication, and each
 *   subscriber's count of the burst (all must be k).
 * Every publish must reach `subscribers` destinations, or the request fails.
 */
import { defineActor } from "../../src/actor/define-actor.ts";
import { monoNow } from "../lib/mono-clock.ts";
import { PAYLOAD_128 } from "../lib/payload.ts";

interface Wait {
  need: number;
  from: Set<string>;
  lastAt: number;
  duplicates: number;
  counts: number[];
  done: () => void;
}

const waits = new Map<string, Wait>();
let sequence = 0;
const data = PAYLOAD_128.data;

function expect(key: string, need: number): { wait: Wait; finished: Promise<void> } {
  const { promise, resolve } = Promise.withResolvers<void>();
  const wait: Wait = { need, from: new Set(), lastAt: 0, duplicates: 0, counts: [], done: resolve };
  waits.set(key, wait);
  return { wait, finished: promise };
}

export default defineActor({
  async onRequest(request, ctx) {
    const { op, topic, subscribers } = request.payload as { op: string; topic: string; subscribers: number };
    const check = (went: number) => {
      if (went !== subscribers) throw new Error(`fan-publisher: ${topic} reached ${went} subscribers, expected ${subscribers}`);
    };
    if (op === "latency") {
      const n = Number(request.payload.n);
      const delivered = new Array<number>(n);
      const reported = new Array<number>(n);
      let duplicates = 0;
      let reporters: string[] = [];
      for (let i = 0; i < n; i++) {
        const trial = ++sequence;
        const { wait, finished } = expect(`t${trial}`, subscribers);
        const t0 = monoNow();
        check(ctx.publish(topic, { mode: "latency", trial, data }));
        await finished;
        reported[i] = monoNow() - t0;
        delivered[i] = wait.lastAt - t0;
        duplicates += wait.duplicates;
        reporters = [...wait.from];
      }
      return { delivered, reported, duplicates, reporters };
    }
    if (op === "burst") {
      const k = Number(request.payload.k);
      const burst = ++sequence;
      const { wait, finished } = expect(`b${burst}`, subscribers);
      const t0 = monoNow();
      for (let i = 0; i < k; i++) check(ctx.publish(topic, { mode: "burst", burst, last: i === k - 1, data }));
      await finished;
      return { ns: monoNow() - t0, deliveredNs: wait.lastAt - t0, counts: wait.counts, duplicates: wait.duplicates };
    }
    throw new Error(`fan-publisher: unknown op ${op}`);
  },
  onEvent(event) {
    const p = event.payload as { trial?: number; burst?: number; count?: number; at: number; from: string };
    const key = p.trial !== undefined ? `t${p.trial}` : `b${p.burst}`;
    const wait = waits.get(key);
    if (!wait) return;
    if (wait.from.has(p.from)) {
      wait.duplicates++;
      return;
    }
    wait.from.add(p.from);
    if (p.count !== undefined) wait.counts.push(p.count);
    if (p.at > wait.lastAt) wait.lastAt = p.at;
    if (wait.from.size === wait.need) {
      waits.delete(key);
      wait.done();
    }
  },
});
