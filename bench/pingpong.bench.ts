/**
 * Ping-pong scenario: sequential request/response round trips of a 128-byte payload between
 * this process (pinned to cpu 0) and a child (cpu 0: "same core", cpu 1: "cross core").
 * Contenders: hermes `RequestChannel.request()` against an echo listener, a connectMesh client
 * calling the echo actor of a real mesh (adapters/mesh-request.ts), the peers a user
 * would pick instead (Bun IPC, Node IPC, NATS request/reply, Redis Streams: adapters/peers.ts;
 * one missing its package or server is skipped with how to install it), and the raw Bun Unix socket echoing 128
 * bytes. All sessions are open at once and measured interleaved in rounds; latencies go into
 * one HdrHistogram per contender and placement. For contenders that name their peer's processes,
 * the CPU time per round trip at each end (/proc/<pid>/schedstat) is reported beside the raw
 * socket's: the JavaScript cost, which latency on an idle core hides.
 *
 * Run alone: `bun bench/pingpong.bench.ts [--quick]`.
 */
import { runStandalone } from "./lib/standalone.ts";
import { hermesRequest } from "./adapters/hermes-request.ts";
import { meshRequest } from "./adapters/mesh-request.ts";
import { cpuNanoseconds, cpuNanosecondsOf } from "./lib/cpu-time.ts";
import { ROUND_TRIP_PEERS, usable, versusHermes } from "./adapters/peers.ts";
import { rawEcho } from "./adapters/raw-echo.ts";
import type { RoundTripPeer, RoundTripSession } from "./adapters/types.ts";
import { LatencyHistogram, PERCENTILES, type LatencySummary } from "./lib/histogram.ts";
import { availablePlacements, type Placement } from "./lib/placement.ts";
import { progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, tempDir, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

const PEERS: readonly RoundTripPeer[] = [hermesRequest, meshRequest, ...ROUND_TRIP_PEERS, rawEcho];
/** The hermes contenders the round-trip goals apply to: the transport alone, and a connectMesh client calling an actor. */
const HERMES_PEERS: readonly RoundTripPeer[] = [hermesRequest, meshRequest];
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
  /** CPU nanoseconds over the recorded round trips: this process, and the peer's processes. */
  cpu: { here: number; peer: number; trips: number };
}

/** Round trips a client timing its own (`roundTrips`) makes per request from here. */
const SELF_TIMED_BATCH = 100;

/** Round trips for about `ms`, each recorded (or not, during warm-up). */
async function measure(run: Run, ms: number, record: boolean): Promise<void> {
  const pids = run.session.peerPids ?? [];
  const here0 = cpuNanoseconds("self");
  const peer0 = cpuNanosecondsOf(pids);
  const trips0 = run.histogram.count;
  try {
    await timedRoundTrips(run, ms, record);
  } finally {
    if (record && pids.length > 0) {
      run.cpu.here += cpuNanoseconds("self") - here0;
      run.cpu.peer += cpuNanosecondsOf(pids) - peer0;
      run.cpu.trips += run.histogram.count - trips0;
    }
  }
}

async function timedRoundTrips(run: Run, ms: number, record: boolean): Promise<void> {
  const end = Bun.nanoseconds() + ms * 1e6;
  if (run.session.roundTrips) {
    do {
      const samples = await run.session.roundTrips(SELF_TIMED_BATCH);
      if (record) for (const ns of samples) run.histogram.record(ns);
    } while (Bun.nanoseconds() < end);
    return;
  }
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
  const { peers, skipped } = usable(PEERS, "pingpong", BASELINE, options.quick);
  const notes = note ? [`pingpong: ${note}`] : [];
  using dir = tempDir();
  const runs: Run[] = [];
  try {
    for (const placement of placements) {
      for (const peer of peers) {
        progress(`pingpong: starting ${peer.name} (${placement.name})`);
        const session = await peer.open({ dir: dir.path, placement });
        runs.push({ peer, placement, session, histogram: new LatencyHistogram(), cpu: { here: 0, peer: 0, trips: 0 } });
      }
    }
    const warmupMs = options.quick ? 50 : 300;
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
    for (const peer of peers.filter((p) => p !== BASELINE)) {
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
            ...(HERMES_PEERS.includes(peer) && { target: { maxRatio: P50_MAX_RATIO } }),
            detail: { samples: mine.count, baselineSamples: base.count, meanUs: mine.mean, baselineMeanUs: base.mean },
          }),
        });
      }
    }
    const baseRun = runs.find((r) => r.peer === BASELINE && r.placement === placement)!;
    for (const run of runs.filter((r) => r.placement === placement && r !== baseRun && r.cpu.trips > 0)) {
      for (const end of ["here", "peer"] as const) {
        figures.push({
          scenario: "pingpong",
          name: `${run.peer.name} CPU per round trip, ${end === "here" ? "client" : "server"}`,
          placement: placement.name,
          unit: "us",
          value: run.cpu[end] / run.cpu.trips / 1000,
          better: "lower",
          ...(baseRun.cpu.trips > 0 && { baseline: { name: `${BASELINE.name} CPU, ${end === "here" ? "client" : "server"}`, value: baseRun.cpu[end] / baseRun.cpu.trips / 1000 } }),
          detail: { trips: run.cpu.trips, source: "/proc/<pid>/schedstat over the recorded rounds" },
        });
      }
    }
    // CPU per round trip is the rounds' CPU over their round trips: it goes with the mean, which the rounds' cold starts pull up.
    const means = runs.filter((r) => r.placement === placement && r.cpu.trips > 0 && (HERMES_PEERS.includes(r.peer) || r === baseRun));
    if (means.length > 0) {
      const shown = means.map((r) => `${r.peer.name} ${summaries.get(r)!.mean.toFixed(1)} us (p50 ${summaries.get(r)!.p50.toFixed(1)})`).join(", ");
      notes.push(`pingpong (${placement.name}): CPU per round trip is per mean round trip: ${shown}; each round starts with processes that sat idle while the others ran`);
    }
    if (peers.length > 2 && peers.includes(hermesRequest)) {
      const hermes = of(hermesRequest);
      const others = peers.filter((p) => p !== hermesRequest).map((p) => ({ name: p.name, value: of(p).p50 }));
      notes.push(versusHermes("pingpong", placement.name, "p50", { name: hermesRequest.name, value: hermes.p50, text: `${hermes.p50.toFixed(1)} us` }, others));
    }
  }
  const histograms = runs.map((r) => ({ peer: r.peer.name, placement: r.placement.name, ...summaries.get(r)! }));
  return { figures, notes, skipped, rounds: histograms };
}

export const pingpongScenario: Scenario = {
  name: "pingpong",
  description: "two-process request/response round trip, 128-byte payload: hermes RequestChannel and peers (Bun/Node IPC, NATS, Redis) vs raw Unix socket",
  run: runPingpong,
};

if (import.meta.main) await runStandalone(runPingpong, "pingpong");
