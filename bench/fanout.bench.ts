/**
 * Fan-out scenario: one publication to 1, 4 and 16 subscribers, each its own process.
 * - Latency: sequential publications, each until every subscriber has it. Two figures per
 *   publication: to the LAST ARRIVAL (subscribers stamp arrival on the machine-wide clock,
 *   bench/lib/mono-clock.ts) and to the last REPORT back at the publisher (a round trip).
 * - Throughput: bursts of publications back to back, until every subscriber reported the
 *   last one with its count (each must have counted the whole burst): publications/s, and
 *   deliveries/s = publications/s x subscribers.
 * Contenders: a publisher actor publishing on a topic to subscriber actors of a real mesh
 * (bench/adapters/mesh-fanout.ts), and this process writing each message to N raw socket
 * subscribers (bench/adapters/raw-fanout.ts), the baseline.
 * Placements: same core (everything on cpu 0), cross core (publisher and this process on
 * cpu 0, every subscriber on cpu 1; quick: only this one). The same processes are moved
 * between placements.
 *
 * Run alone: `bun bench/fanout.bench.ts [--quick]`.
 */
import { existsSync } from "node:fs";
import { runStandalone } from "./lib/standalone.ts";
import { AUDIENCES, meshFanout } from "./adapters/mesh-fanout.ts";
import { rawFanout } from "./adapters/raw-fanout.ts";
import type { FanoutPeer, FanoutSession } from "./adapters/types.ts";
import type { Chart } from "./lib/chart-data.ts";
import { LatencyHistogram, median } from "./lib/histogram.ts";
import { monoPrecise } from "./lib/mono-clock.ts";
import { allowedCpus, availablePlacements, measuredPlacements, pinPid, type Placement } from "./lib/placement.ts";
import { progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, tempDir, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

const PEERS: readonly FanoutPeer[] = [meshFanout, rawFanout];
const BASELINE = rawFanout;
const SIZE = Math.max(...AUDIENCES);

interface Run {
  peer: FanoutPeer;
  session: FanoutSession;
  subscribers: number;
  delivered: LatencyHistogram;
  reported: LatencyHistogram;
  /** Publications per second of each burst. */
  rates: number[];
  problems: string[];
}

/** Checks one latency batch: nobody reported twice, and exactly the audience reported. */
export function latencyProblems(result: { duplicates: number; reporters: string[] }, subscribers: number): string[] {
  const problems: string[] = [];
  if (result.duplicates > 0) problems.push(`${result.duplicates} duplicate reports`);
  if (new Set(result.reporters).size !== subscribers || result.reporters.length !== subscribers) problems.push(`${result.reporters.length} reporters (${new Set(result.reporters).size} distinct) for ${subscribers} subscribers`);
  return problems;
}

/** Checks one burst: every subscriber counted exactly `k`. */
export function burstProblems(counts: readonly number[], k: number, subscribers: number): string[] {
  if (counts.length !== subscribers) return [`${counts.length} of ${subscribers} subscribers reported a burst`];
  const off = counts.filter((c) => c !== k);
  return off.length > 0 ? [`subscribers counted ${off.join(", ")} of a burst of ${k}`] : [];
}

async function latencyBatch(run: Run, n: number, record: boolean): Promise<void> {
  const r = await run.session.latency(n, run.subscribers);
  run.problems.push(...latencyProblems(r, run.subscribers));
  if (!record) return;
  for (const ns of r.delivered) run.delivered.record(ns);
  for (const ns of r.reported) run.reported.record(ns);
}

async function burst(run: Run, k: number, record: boolean): Promise<void> {
  const r = await run.session.burst(k, run.subscribers);
  run.problems.push(...burstProblems(r.counts, k, run.subscribers));
  if (record) run.rates.push((k / r.ns) * 1e9);
}

function place(session: FanoutSession, placement: Placement): void {
  session.pids.forEach((pid, i) => {
    if (pid === process.pid || placement.childCpu === undefined) return;
    const cpu = i === 0 ? 0 : placement.childCpu;
    if (!pinPid(pid, cpu!) || allowedCpus(pid) !== String(cpu)) {
      const why = existsSync(`/proc/${pid}`) ? `it runs on cpus ${allowedCpus(pid)}` : "it is gone (restarted?)";
      throw new Error(`could not move fan-out process ${i} (pid ${pid}) to cpu ${cpu}: ${why}`);
    }
  });
}

export async function runFanout(options: ScenarioOptions): Promise<ScenarioResult> {
  const available = availablePlacements();
  const placements = measuredPlacements(options.quick, available.placements);
  const notes = available.note ? [`fanout: ${available.note}`] : [];
  if (!monoPrecise()) notes.push("fanout: libc's clock_gettime could not be loaded: arrival times use the wall clock (microsecond agreement between processes)");
  using dir = tempDir();
  const sessions: Array<{ peer: FanoutPeer; session: FanoutSession }> = [];
  const byPlacement = new Map<Placement, Run[]>();
  // Deliveries per burst (a burst of k publications to N subscribers is k x N deliveries) and publications per latency batch.
  const deliveries = options.quick ? 2000 : 40_000;
  const batch = options.quick ? 24 : 200;
  try {
    for (const peer of PEERS) {
      progress(`fanout: starting ${peer.name} with ${SIZE} subscribers`);
      sessions.push({ peer, session: await peer.open({ dir: dir.path, size: SIZE }) });
    }
    for (const placement of placements) {
      for (const { session } of sessions) place(session, placement);
      const runs: Run[] = sessions.flatMap(({ peer, session }) =>
        AUDIENCES.map((subscribers) => ({ peer, session, subscribers, delivered: new LatencyHistogram(), reported: new LatencyHistogram(), rates: [], problems: [] })));
      byPlacement.set(placement, runs);
      for (const run of runs) {
        progress(`fanout: warming up ${run.peer.name} to ${run.subscribers} (${placement.name})`);
        await latencyBatch(run, Math.ceil((run.peer === meshFanout && !options.quick ? 2 * batch : batch) / Math.sqrt(run.subscribers)), false);
        await burst(run, Math.ceil(deliveries / 4 / run.subscribers), false);
      }
      const sliceMs = options.durationMs / placements.length / (options.rounds * runs.length);
      for (let round = 0; round < options.rounds; round++) {
        progress(`fanout (${placement.name}): round ${round + 1}/${options.rounds} (${runs.length} runs, ~${Math.round(sliceMs)} ms each)`);
        for (const run of rotated(runs, round)) {
          const end = performance.now() + sliceMs / 2;
          do await latencyBatch(run, Math.ceil(batch / Math.sqrt(run.subscribers)), true);
          while (performance.now() < end);
          await burst(run, Math.ceil(deliveries / run.subscribers), true);
        }
      }
      for (const run of runs) {
        const distinct = [...new Set(run.problems)];
        if (distinct.length > 0) notes.push(`fanout (${placement.name}): ${run.peer.name} to ${run.subscribers}: ${distinct.slice(0, 3).join("; ")}: FIGURES INVALID`);
      }
    }
    if (!notes.some((n) => n.includes("INVALID"))) notes.push("fanout: every publication reached every subscriber of its audience exactly once, and every burst was counted whole by each");
  } finally {
    progressDone();
    for (const { session } of [...sessions].reverse()) await disposeQuietly(session);
  }
  return summarize(byPlacement, notes);
}

function summarize(byPlacement: Map<Placement, Run[]>, notes: string[]): ScenarioResult {
  const figures: Figure[] = [];
  const charts: Chart[] = [];
  const rounds: unknown[] = [];
  for (const [placement, runs] of byPlacement) {
    const run = (peer: FanoutPeer, n: number) => runs.find((r) => r.peer === peer && r.subscribers === n)!;
    const us = { scenario: "fanout", placement: placement.name, unit: "us", better: "lower" } as const;
    for (const n of AUDIENCES) {
      const mine = run(meshFanout, n);
      const base = run(BASELINE, n);
      const [rep, baseRep, del, baseDel] = [mine.reported.summary(), base.reported.summary(), mine.delivered.summary(), base.delivered.summary()];
      figures.push({ ...us, name: `publish to ${n}, all reported back p50`, value: rep.p50, baseline: { name: `raw to ${n}, all answered p50`, value: baseRep.p50 }, detail: { samples: rep.count, baselineSamples: baseRep.count } });
      figures.push({ ...us, name: `publish to ${n}, all reported back p99`, value: rep.p99, baseline: { name: `raw to ${n}, all answered p99`, value: baseRep.p99 } });
      figures.push({ ...us, name: `publish to ${n}, last arrival p50`, value: del.p50, baseline: { name: `raw to ${n}, last arrival p50`, value: baseDel.p50 }, detail: { p99: del.p99, baselineP99: baseDel.p99 } });
      const rate = median(mine.rates);
      const baseRate = median(base.rates);
      figures.push({
        scenario: "fanout", placement: placement.name, unit: "pub/s", better: "higher", name: `publications/s to ${n}`, value: rate,
        baseline: { name: `raw messages/s to ${n}`, value: baseRate },
        detail: { deliveriesPerSec: rate * n, baselineDeliveriesPerSec: baseRate * n, roundsPerSec: mine.rates.map(Math.round) },
      });
      for (const r of [mine, base]) rounds.push({ peer: r.peer.name, placement: placement.name, subscribers: n, reported: r.reported.summary(), delivered: r.delivered.summary(), rates: r.rates.map(Math.round) });
    }
    charts.push({
      kind: "lines", title: `fanout: publish to all reported back, by subscribers, ${placement.name}`, xLabel: "subscribers", yLabel: "us", logX: true,
      series: PEERS.flatMap((peer) => (["p50", "p99"] as const).map((k) => ({ label: `${peer.name} ${k}`, points: AUDIENCES.map((n): [number, number] => [n, run(peer, n).reported.summary()[k]]) }))),
    });
    charts.push({ kind: "percentiles", title: `fanout to ${SIZE}, all reported back, ${placement.name}`, series: PEERS.map((peer) => ({ label: peer.name, points: run(peer, SIZE).reported.curve() })) });
    charts.push({ kind: "bars", title: `fanout: deliveries/s, ${placement.name}`, unit: "deliveries/s", bars: PEERS.flatMap((peer) => AUDIENCES.map((n) => ({ label: `${peer.name} to ${n}`, value: median(run(peer, n).rates) * n, baseline: peer === BASELINE }))) });
    const perDelivery = AUDIENCES.map((n) => `${n}: ${(run(meshFanout, n).reported.summary().p50 / n).toFixed(1)} / ${(run(BASELINE, n).reported.summary().p50 / n).toFixed(1)}`);
    notes.push(`fanout (${placement.name}): all-reported p50 per subscriber in us (actor publish / raw) by audience: ${perDelivery.join(", ")}`);
    const deliveries = AUDIENCES.map((n) => `${n}: ${((median(run(meshFanout, n).rates) * n) / 1000).toFixed(0)}k / ${((median(run(BASELINE, n).rates) * n) / 1000).toFixed(0)}k`);
    notes.push(`fanout (${placement.name}): deliveries/s (actor publish / raw) by audience: ${deliveries.join(", ")}`);
  }
  notes.push("fanout: the actor side is timed inside the publisher actor (cpu 0), the raw side in this process (cpu 0); a report back is a small event (actors) or 9 bytes (raw)");
  return { figures, notes, rounds, charts };
}

export const fanoutScenario: Scenario = {
  name: "fanout",
  description: "topic fan-out: one publish to 1, 4, 16 subscriber actors (each a process): time to last arrival and to all reports, publications/s, vs raw socket writes to N processes",
  run: runFanout,
};

if (import.meta.main) await runStandalone(runFanout, "fanout");
