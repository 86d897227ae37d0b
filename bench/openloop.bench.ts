/**
 * Open-loop scenario: latency under load. Requests of 128 bytes are sent on a fixed schedule
 * at offered rates of 1k, 5k and 20k per second and at 50% and 90% of the actor hop's
 * closed-loop maximum, whether or not earlier ones were answered, and every latency is
 * measured from the request's SCHEDULED send time (bench/lib/open-loop.ts: coordinated-omission
 * corrected; plain HdrHistogram values, no expected-interval back-fill). The achieved rate is
 * reported next to the offered one.
 * Contenders: the actor hop (the pinger actor runs the schedule against the echo actor of a
 * real mesh, bench/adapters/mesh-hop.ts), the hermes transport alone (RequestChannel, many
 * requests outstanding), and the raw Unix socket echo with pipelined requests, the baseline.
 * The closed-loop maximum (32 requests kept outstanding) of each is reported too.
 * Placements: same core and cross core (quick: cross core only). The generator keeps its own
 * cpu busy between sends (see open-loop.ts), which on one core takes cpu time from the peer.
 *
 * Run alone: `bun bench/openloop.bench.ts [--quick]`.
 */
import { runStandalone } from "./lib/standalone.ts";
import { hermesRequest } from "./adapters/hermes-request.ts";
import { meshOpenLoop } from "./adapters/mesh-hop.ts";
import { openLoopOf } from "./adapters/open-loop-local.ts";
import { rawPipelined } from "./adapters/raw-pipelined.ts";
import type { OpenLoopPeer, OpenLoopSession } from "./adapters/types.ts";
import type { Chart } from "./lib/chart-data.ts";
import { LatencyHistogram, median } from "./lib/histogram.ts";
import type { OpenLoopResult } from "./lib/open-loop.ts";
import { availablePlacements, measuredPlacements, type Placement } from "./lib/placement.ts";
import { formatValue, progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, tempDir, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

const TRANSPORT = openLoopOf(hermesRequest, "hermes transport");
const PEERS: readonly OpenLoopPeer[] = [meshOpenLoop, TRANSPORT, rawPipelined];
const BASELINE = rawPipelined;
/** The contender whose closed-loop maximum sets the relative rates. */
const REFERENCE = meshOpenLoop;
export const FIXED_RATES = [1000, 5000, 20_000] as const;
export const FRACTIONS = [0.5, 0.9] as const;
const CONCURRENCY = 32;

/** The offered rates: the fixed ones and the fractions of a closed-loop maximum, rounded to 100/s, ascending, without repeats. */
export function offeredRates(closedLoopMax: number, fixed: readonly number[] = FIXED_RATES, fractions: readonly number[] = FRACTIONS): number[] {
  const relative = fractions.map((f) => Math.max(100, Math.round((closedLoopMax * f) / 100) * 100));
  return [...new Set([...fixed, ...relative])].sort((a, b) => a - b);
}

interface Run {
  peer: OpenLoopPeer;
  session: OpenLoopSession;
  rate: number;
  fromScheduled: LatencyHistogram;
  fromSent: LatencyHistogram;
  sendLag: LatencyHistogram;
  achieved: number[];
  saturated: number;
  failed: number;
}

function absorb(run: Run, r: OpenLoopResult): void {
  run.fromScheduled.add(r.fromScheduled);
  run.fromSent.add(r.fromSent);
  run.sendLag.add(r.sendLag);
  run.achieved.push(r.achieved);
  if (r.saturated) run.saturated++;
  run.failed += r.failed;
}

export async function runOpenloop(options: ScenarioOptions): Promise<ScenarioResult> {
  const available = availablePlacements();
  const placements = measuredPlacements(options.quick, available.placements);
  const notes = available.note ? [`openloop: ${available.note}`] : [];
  using dir = tempDir();
  const results: Array<{ placement: Placement; runs: Run[]; closed: Map<OpenLoopPeer, number> }> = [];
  for (const placement of placements) {
    const sessions: Array<{ peer: OpenLoopPeer; session: OpenLoopSession }> = [];
    try {
      for (const peer of PEERS) {
        progress(`openloop: starting ${peer.name} (${placement.name})`);
        sessions.push({ peer, session: await peer.open({ dir: dir.path, placement }) });
      }
      const closed = new Map<OpenLoopPeer, number>();
      for (const { peer, session } of sessions) {
        progress(`openloop: warming up ${peer.name}, then its closed-loop maximum (${placement.name})`);
        await session.closedLoop(CONCURRENCY, peer === meshOpenLoop ? (options.quick ? 500 : 1500) : options.quick ? 100 : 300);
        closed.set(peer, await session.closedLoop(CONCURRENCY, options.quick ? 300 : 1000));
      }
      const rates = offeredRates(closed.get(REFERENCE)!);
      const runs: Run[] = sessions.flatMap(({ peer, session }) => rates.map((rate) => ({
        peer, session, rate, fromScheduled: new LatencyHistogram(), fromSent: new LatencyHistogram(), sendLag: new LatencyHistogram(), achieved: [], saturated: 0, failed: 0,
      })));
      const sliceMs = Math.max(100, options.durationMs / placements.length / (options.rounds * runs.length));
      for (let round = 0; round < options.rounds; round++) {
        progress(`openloop (${placement.name}): round ${round + 1}/${options.rounds} (${runs.length} runs, ${Math.round(sliceMs)} ms each)`);
        for (const run of rotated(runs, round)) absorb(run, await run.session.run({ rate: run.rate, durationMs: sliceMs }));
      }
      results.push({ placement, runs, closed });
    } finally {
      progressDone();
      for (const { session } of [...sessions].reverse()) await disposeQuietly(session);
    }
  }
  return summarize(results, notes);
}

function summarize(results: Array<{ placement: Placement; runs: Run[]; closed: Map<OpenLoopPeer, number> }>, notes: string[]): ScenarioResult {
  const figures: Figure[] = [];
  const charts: Chart[] = [];
  const rounds: unknown[] = [];
  for (const { placement, runs, closed } of results) {
    const rates = [...new Set(runs.map((r) => r.rate))];
    const runOf = (peer: OpenLoopPeer, rate: number) => runs.find((r) => r.peer === peer && r.rate === rate)!;
    const us = { scenario: "openloop", placement: placement.name, unit: "us", better: "lower" } as const;
    for (const peer of PEERS.filter((p) => p !== BASELINE)) {
      figures.push({
        scenario: "openloop", placement: placement.name, unit: "req/s", better: "higher", name: `${peer.name} closed-loop max (${CONCURRENCY} outstanding)`,
        value: closed.get(peer)!, baseline: { name: `${BASELINE.name} closed-loop max`, value: closed.get(BASELINE)! },
      });
    }
    for (const rate of rates) {
      const offered = formatValue(rate, "/s");
      const base = runOf(BASELINE, rate);
      const b = base.fromScheduled.summary();
      for (const peer of PEERS.filter((p) => p !== BASELINE)) {
        const run = runOf(peer, rate);
        const s = run.fromScheduled.summary();
        const keys = peer === REFERENCE ? (["p50", "p99", "p999"] as const) : (["p50", "p99"] as const);
        for (const k of keys) {
          const label = k === "p999" ? "p99.9" : k;
          figures.push({ ...us, name: `${peer.name} at ${offered} ${label}`, value: s[k], baseline: { name: `${BASELINE.name} at ${offered} ${label}`, value: b[k] },
            ...(k === "p50" && { detail: { offered: rate, samples: s.count, fromSentP99Us: run.fromSent.summary().p99, sendLagP99Us: run.sendLag.summary().p99, saturatedRuns: run.saturated, failed: run.failed } }) });
        }
        figures.push({
          scenario: "openloop", placement: placement.name, unit: "req/s", better: "higher", name: `${peer.name} at ${offered} achieved`,
          value: median(run.achieved), baseline: { name: `${BASELINE.name} at ${offered} achieved`, value: median(base.achieved) }, detail: { offered: rate },
        });
      }
    }
    for (const run of runs) {
      if (run.saturated > 0 || run.failed > 0) notes.push(`openloop (${placement.name}): ${run.peer.name} at ${run.rate}/s: ${run.saturated} of ${run.achieved.length} runs saturated (answers still missing or too many outstanding), ${run.failed} requests failed`);
      rounds.push({ peer: run.peer.name, placement: placement.name, offered: run.rate, achieved: run.achieved.map(Math.round), fromScheduled: run.fromScheduled.summary(), fromSent: run.fromSent.summary(), sendLag: run.sendLag.summary() });
    }
    const lag = PEERS.map((peer) => `${peer.name} ${Math.max(...rates.map((r) => runOf(peer, r).sendLag.summary().p99)).toFixed(1)} us`);
    notes.push(`openloop (${placement.name}): generator lag behind schedule, worst p99 over the rates: ${lag.join(", ")}`);
    const top = rates.at(-1)!;
    const co = PEERS.map((peer) => `${peer.name} ${runOf(peer, top).fromScheduled.summary().p99.toFixed(0)} vs ${runOf(peer, top).fromSent.summary().p99.toFixed(0)} us`);
    notes.push(`openloop (${placement.name}): at ${top}/s, p99 from the scheduled vs from the actual send time: ${co.join(", ")}`);
    charts.push({
      kind: "lines", title: `openloop: latency from scheduled send by offered rate, ${placement.name}`, xLabel: "offered req/s", yLabel: "us", logX: true, logY: true,
      series: PEERS.flatMap((peer) => (["p50", "p99"] as const).map((k) => ({ label: `${peer.name} ${k}`, points: rates.map((r): [number, number] => [r, runOf(peer, r).fromScheduled.summary()[k]]) }))),
    });
    charts.push({ kind: "percentiles", title: `openloop at ${top}/s offered, ${placement.name}`, series: PEERS.map((peer) => ({ label: peer.name, points: runOf(peer, top).fromScheduled.curve() })) });
    charts.push({ kind: "bars", title: `openloop: closed-loop max, ${placement.name}`, unit: "req/s", bars: PEERS.map((peer) => ({ label: peer.name, value: closed.get(peer)!, baseline: peer === BASELINE })) });
  }
  notes.push(`openloop: the actor hop's schedule runs in the pinger actor (cpu 0), the others in this process (cpu 0); offered rates ${FIXED_RATES.join(", ")}/s and ${FRACTIONS.map((f) => `${f * 100}%`).join(", ")} of the actor hop's closed-loop maximum`);
  return { figures, notes, rounds, charts };
}

export const openloopScenario: Scenario = {
  name: "openloop",
  description: "open-loop load at fixed offered rates (1k, 5k, 20k/s, 50% and 90% of the closed-loop max), latency from the scheduled send: actor hop, hermes transport, raw socket",
  run: runOpenloop,
};

if (import.meta.main) await runStandalone(runOpenloop, "openloop");
