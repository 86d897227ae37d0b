/**
 * Hop scenario: request/response round trips between two ACTOR processes of a real mesh, a
 * pinger and an echo (bench/adapters/mesh-hop.ts), timed inside the pinger: the whole actor
 * path (handler context, envelope, routing, link, dedupe, mailbox, handler, answer, ack).
 * In the same run, interleaved in rounds: the hermes transport alone (RequestChannel to an
 * echo listener, as in pingpong) and the raw Unix socket ping-pong, the baseline.
 * Placements: same core (pinger, echo, this process on cpu 0) and cross core (echo on cpu 1).
 *
 * Run alone: `bun bench/hop.bench.ts [--quick]`.
 */
import { hermesRequest } from "./adapters/hermes-request.ts";
import { meshHop } from "./adapters/mesh-hop.ts";
import { rawEcho } from "./adapters/raw-echo.ts";
import { sampled } from "./adapters/sampled.ts";
import type { SampledRoundTripPeer, SampledRoundTripSession } from "./adapters/types.ts";
import { LatencyHistogram, PERCENTILES, type LatencySummary } from "./lib/histogram.ts";
import { availablePlacements, pinSelf, type Placement } from "./lib/placement.ts";
import { formatTable, progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, tempDir, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

const RAW = sampled(rawEcho);
const TRANSPORT = sampled(hermesRequest, "hermes transport");
const PEERS: readonly SampledRoundTripPeer[] = [meshHop, TRANSPORT, RAW];
const BASELINE = RAW;
/** Goal from the brief: the actor hop's p50 within 1.3x of the raw socket's. */
const P50_MAX_RATIO = 1.3;
/** Round trips per batch: one harness request to the pinger each (about 50 ms of hops). */
const BATCH = 1000;
const POINTS: ReadonlyArray<[keyof LatencySummary, string]> = [...PERCENTILES.map(([key, p]) => [key, `p${p}`] as [keyof LatencySummary, string]), ["max", "max"]];

interface Run {
  peer: SampledRoundTripPeer;
  placement: Placement;
  session: SampledRoundTripSession;
  histogram: LatencyHistogram;
}

/** Batches of round trips for about `ms`, recorded (or not, during warm-up). */
export async function measureHops(session: SampledRoundTripSession, ms: number, histogram?: LatencyHistogram, batch = BATCH): Promise<number> {
  const end = performance.now() + ms;
  let count = 0;
  do {
    const samples = await session.roundTrips(batch);
    if (histogram) for (const ns of samples) histogram.record(ns);
    count += samples.length;
  } while (performance.now() < end);
  return count;
}

export async function runHop(options: ScenarioOptions): Promise<ScenarioResult> {
  const { placements, note } = availablePlacements();
  const notes = note ? [`hop: ${note}`] : [];
  using dir = tempDir();
  const runs: Run[] = [];
  try {
    for (const placement of placements) {
      for (const peer of PEERS) {
        progress(`hop: starting ${peer.name} (${placement.name})`);
        const session = await peer.open({ dir: dir.path, placement });
        runs.push({ peer, placement, session, histogram: new LatencyHistogram() });
      }
    }
    // The actors run much more code than the socket fixtures: their JIT workers are still
    // compiling after a short warm-up, and on one core that shows as millisecond stalls.
    const warmupMs = (peer: SampledRoundTripPeer) => (peer === meshHop ? (options.quick ? 600 : 1500) : options.quick ? 100 : 300);
    for (const run of runs) await measureHops(run.session, warmupMs(run.peer));
    const sliceMs = options.durationMs / (options.rounds * runs.length);
    for (let round = 0; round < options.rounds; round++) {
      progress(`hop: round ${round + 1}/${options.rounds} (${runs.length} sessions, ${Math.round(sliceMs)} ms each)`);
      for (const run of rotated(runs, round)) await measureHops(run.session, sliceMs, run.histogram);
    }
  } finally {
    progressDone();
    for (const run of runs) if (run.session.note) notes.push(`hop: ${run.session.note()}`);
    for (const run of [...runs].reverse()) await disposeQuietly(run.session);
  }
  const summaries = new Map(runs.map((r) => [r, r.histogram.summary()]));
  const figures: Figure[] = [];
  for (const placement of placements) {
    const of = (peer: SampledRoundTripPeer) => summaries.get(runs.find((r) => r.peer === peer && r.placement === placement)!)!;
    const base = of(BASELINE);
    const hop = of(meshHop);
    for (const [key, label] of POINTS) {
      figures.push({
        scenario: "hop", name: `${meshHop.name} ${label}`, placement: placement.name, unit: "us", value: hop[key], better: "lower",
        baseline: { name: `${BASELINE.name} ${label}`, value: base[key] },
        ...(key === "p50" && {
          target: { maxRatio: P50_MAX_RATIO },
          detail: { samples: hop.count, baselineSamples: base.count, meanUs: hop.mean, baselineMeanUs: base.mean },
        }),
      });
    }
    const transport = of(TRANSPORT);
    for (const [key, label] of POINTS.filter(([key]) => key === "p50" || key === "p99")) {
      figures.push({
        scenario: "hop", name: `${TRANSPORT.name} ${label}`, placement: placement.name, unit: "us", value: transport[key], better: "lower",
        baseline: { name: `${BASELINE.name} ${label}`, value: base[key] },
      });
    }
    notes.push(`hop (${placement.name}): the actor runtime adds ${(hop.p50 - transport.p50).toFixed(1)} us at p50 to the hermes transport alone, which adds ${(transport.p50 - base.p50).toFixed(1)} us to the raw socket (${hop.count} hops, ${transport.count} and ${base.count} round trips)`);
  }
  notes.push("hop: the actor hop is timed inside the pinger actor (pinger on cpu 0; echo on cpu 0 or 1); the socket contenders are timed in this process (cpu 0) against a child on cpu 0 or 1");
  const histograms = runs.map((r) => ({ peer: r.peer.name, placement: r.placement.name, ...summaries.get(r)! }));
  return { figures, notes, rounds: histograms };
}

export const hopScenario: Scenario = {
  name: "hop",
  description: "actor-to-actor request/response through a real mesh (pinger -> echo) vs the hermes transport alone and the raw Unix socket",
  run: runHop,
};

if (import.meta.main) {
  const quick = process.argv.includes("--quick");
  const restore = pinSelf(0);
  try {
    const result = await runHop({ durationMs: quick ? 3000 : 12_000, rounds: quick ? 4 : 10, quick });
    console.log(formatTable(result.figures));
    for (const note of result.notes) console.log(note);
  } finally {
    restore();
  }
}
