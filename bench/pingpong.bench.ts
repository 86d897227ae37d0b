/**
 * Ping-pong scenario: sequential request/response round trips of a 128-byte payload between
 * this process (pinned to cpu 0) and a child (cpu 0: "same core", cpu 1: "cross core").
 * Contenders: hermes `RequestChannel.request()` against an echo listener, and the raw Bun
 * Unix socket echoing 128 bytes. All sessions are open at once and measured interleaved in
 * rounds; latencies go into one HdrHistogram per contender and placement.
 *
 * Run alone: `bun bench/pingpong.bench.ts [--quick]`.
 */
import { hermesRequest } from "./adapters/hermes-request.ts";
import { rawEcho } from "./adapters/raw-echo.ts";
import type { RoundTripPeer, RoundTripSession } from "./adapters/types.ts";
import { LatencyHistogram, PERCENTILES, type LatencySummary } from "./lib/histogram.ts";
import { availablePlacements, pinSelf, type Placement } from "./lib/placement.ts";
import { formatTable, progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, tempDir, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

const PEERS: readonly RoundTripPeer[] = [hermesRequest, rawEcho];
const BASELINE = rawEcho;
/** Goal from the brief: hermes p50 within 1.3x of the raw socket's. */
const P50_MAX_RATIO = 1.3;
/** The reported points of each histogram, as [summary key, label]. */
const POINTS: ReadonlyArray<[keyof LatencySummary, string]> = [...PERCENTILES.map(([key, p]) => [key, `p${p}`] as [keyof LatencySummary, string]), ["max", "max"]];

interface Run {
  peer: RoundTripPeer;
  placement: Placement;
  session: RoundTripSession;
  histogram: LatencyHistogram;
}

/** Round trips for about `ms`, each recorded (or not, during warm-up). */
async function measure(run: Run, ms: number, record: boolean): Promise<void> {
  const end = Bun.nanoseconds() + ms * 1e6;
  let t = Bun.nanoseconds();
  while (t < end) {
    await run.session.roundTrip();
    const now = Bun.nanoseconds();
    if (record) run.histogram.record(now - t);
    t = now;
  }
}

export async function runPingpong(options: ScenarioOptions): Promise<ScenarioResult> {
  const { placements, note } = availablePlacements();
  const notes = note ? [`pingpong: ${note}`] : [];
  using dir = tempDir();
  const runs: Run[] = [];
  try {
    for (const placement of placements) {
      for (const peer of PEERS) {
        progress(`pingpong: starting ${peer.name} (${placement.name})`);
        const session = await peer.open({ dir: dir.path, placement });
        runs.push({ peer, placement, session, histogram: new LatencyHistogram() });
      }
    }
    const warmupMs = options.quick ? 100 : 300;
    for (const run of runs) await measure(run, warmupMs, false);
    const sliceMs = options.durationMs / (options.rounds * runs.length);
    for (let round = 0; round < options.rounds; round++) {
      progress(`pingpong: round ${round + 1}/${options.rounds} (${runs.length} sessions, ${Math.round(sliceMs)} ms each)`);
      for (const run of rotated(runs, round)) await measure(run, sliceMs, true);
    }
  } finally {
    progressDone();
    for (const run of [...runs].reverse()) await disposeQuietly(run.session);
  }
  const summaries = new Map(runs.map((r) => [r, r.histogram.summary()]));
  const figures: Figure[] = [];
  for (const placement of placements) {
    const of = (peer: RoundTripPeer) => summaries.get(runs.find((r) => r.peer === peer && r.placement === placement)!)!;
    const base = of(BASELINE);
    for (const peer of PEERS.filter((p) => p !== BASELINE)) {
      const mine = of(peer);
      for (const [key, label] of POINTS) {
        figures.push({
          scenario: "pingpong",
          name: `${peer.name} ${label}`,
          placement: placement.name,
          unit: "us",
          value: mine[key],
          better: "lower",
          baseline: { name: `${BASELINE.name} ${label}`, value: base[key] },
          ...(key === "p50" && {
            target: { maxRatio: P50_MAX_RATIO },
            detail: { samples: mine.count, baselineSamples: base.count, meanUs: mine.mean, baselineMeanUs: base.mean },
          }),
        });
      }
    }
  }
  const histograms = runs.map((r) => ({ peer: r.peer.name, placement: r.placement.name, ...summaries.get(r)! }));
  return { figures, notes, rounds: histograms };
}

export const pingpongScenario: Scenario = {
  name: "pingpong",
  description: "two-process request/response round trip, 128-byte payload: hermes RequestChannel vs raw Unix socket",
  run: runPingpong,
};

if (import.meta.main) {
  const quick = process.argv.includes("--quick");
  const restore = pinSelf(0);
  try {
    const result = await runPingpong({ durationMs: quick ? 3000 : 12_000, rounds: quick ? 4 : 10, quick });
    console.log(formatTable(result.figures));
    for (const note of result.notes) console.log(note);
  } finally {
    restore();
  }
}
