/**
 * Stream scenario: one-way bursts of 128-byte-payload messages from this process (cpu 0) to
 * a receiver child (cpu 0 or 1), end to end: a burst ends when the receiver has acknowledged
 * every message. Contenders: hermes event envelopes through `Connection.send` with the
 * receiver's window at 1024, 4096 and 8192, the peers a user would pick instead (Bun and Node
 * IPC, one message per send and arrays of 256; NATS publish; Redis Streams XADD to a consumer
 * group: adapters/peers.ts; one missing its package or server is skipped with how to install it), the
 * actor path (a connectMesh client to an actor process: events awaited with `send`, with the
 * sink's trace lines off and, as a mesh file has them by default, on; and 1,000 pipelined
 * requests: adapters/mesh-stream.ts), and raw
 * length-prefixed frames written in batches.
 * Bursts are sized after a warm-up (160,000 messages, quick 10,000) so each lasts about one
 * slice, and interleaved in rounds.
 *
 * With --quick: cross core and the default window only.
 *
 * Run alone: `bun bench/stream.bench.ts [--quick]`.
 */
import { runStandalone } from "./lib/standalone.ts";
import { hermesStream } from "./adapters/hermes-stream.ts";
import { STREAM_PEERS, usable, versusHermes } from "./adapters/peers.ts";
import { rawStream } from "./adapters/raw-stream.ts";
import { actorEvents, actorPipelined, meshEvents, meshEventsTraced, meshPipelined } from "./adapters/mesh-stream.ts";
import { natsStream } from "./adapters/nats.ts";
import type { StreamPeer, StreamSession } from "./adapters/types.ts";
import { median } from "./lib/histogram.ts";
import { RAW_128 } from "./lib/payload.ts";
import { availablePlacements, measuredPlacements, BOTH_CORES, pinSelf, taskset, type Placement } from "./lib/placement.ts";
import { availableParallelism } from "node:os";
import { progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, tempDir, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

export const WINDOWS = [1024, 4096, 8192] as const; // 4096 is the default window
const HERMES: readonly StreamPeer[] = WINDOWS.map(hermesStream);
/** The hermes contender the peers are compared with: the default window. */
const HERMES_DEFAULT = HERMES[1]!;
/** What users run: a connectMesh client and an actor process, and one actor and another (events, and 1,000 pipelined requests). */
const ACTOR_EVENTS: readonly StreamPeer[] = [meshEvents, meshEventsTraced, actorEvents];
const ACTOR_PIPELINED: readonly StreamPeer[] = [meshPipelined(1000), actorPipelined(1000)];
const ACTOR_PATH: readonly StreamPeer[] = [...ACTOR_EVENTS, ...ACTOR_PIPELINED];
/** Goals from issue 13: acknowledged events at least 2x NATS core publish; 1,000 pipelined requests at 0.5 M/s. */
const MIN_EVENTS_RATIO_TO_NATS = 2;
const MIN_PIPELINED_PER_SEC = 500_000;
const PEERS: readonly StreamPeer[] = [...HERMES, ...ACTOR_PATH, ...STREAM_PEERS, rawStream];
const BASELINE = rawStream;
/** Goal from the brief: at least a million envelopes a second end to end. */
const MIN_ENVELOPES_PER_SEC = 1_000_000;

interface Run {
  peer: StreamPeer;
  placement: Placement;
  session: StreamSession;
  burst: number;
  sent: number;
  rates: number[];
  /** When its last burst ended (performance.now()). */
  lastEnd?: number;
}

/** One burst of `n` messages; returns messages per second, end to end. */
export async function timedBurst(session: StreamSession, n: number): Promise<number> {
  const t0 = Bun.nanoseconds();
  await session.send(n);
  return (n / (Bun.nanoseconds() - t0)) * 1e9;
}

/** A burst on its placement: for BOTH_CORES this process is unpinned for the burst's duration. */
async function placedBurst(run: Run, n: number): Promise<number> {
  if (run.placement !== BOTH_CORES) return timedBurst(run.session, n);
  const repin = pinSelf(`0-${availableParallelism() - 1}`);
  try {
    return await timedBurst(run.session, n);
  } finally {
    repin();
  }
}

export async function runStream(options: ScenarioOptions): Promise<ScenarioResult> {
  const available = availablePlacements();
  const { note } = available;
  // --quick measures the one placement the targets read first (cross core where there are two
  // cores) and the default window only: 12 sessions instead of 42 (its start-ups and warm-ups
  // were most of a quick run). The full run has all three placements and windows.
  const all = taskset() && availableParallelism() > 1 ? [...available.placements, BOTH_CORES] : available.placements;
  const placements = measuredPlacements(options.quick, all);
  const contenders = options.quick ? PEERS.filter((peer) => !HERMES.includes(peer) || peer === HERMES_DEFAULT) : PEERS;
  const { peers, skipped } = usable(contenders, "stream", BASELINE, options.quick);
  const notes = note ? [`stream: ${note}`] : [];
  using dir = tempDir();
  const runs: Run[] = [];
  try {
    for (const placement of placements) {
      for (const peer of peers) {
        progress(`stream: starting ${peer.name} (${placement.name})`);
        const session = await peer.open({ dir: dir.path, placement });
        runs.push({ peer, placement, session, burst: 0, sent: 0, rates: [] });
      }
    }
    const sliceMs = options.durationMs / (options.rounds * runs.length);
    // The full run warms every contender past 100,000 messages: an actor's dedupe memory fills
    // there, and the first evictions are compiled then (about 36 ms of the sink's JIT, its main
    // thread 25% slower for 20,000 events). Measured from 100,000, the actor path read a third
    // of its steady rate (docs/benchmarks.md, "JIT warm-up"). Quick measures the cold start.
    const warmup = options.quick ? 10_000 : 160_000;
    for (const run of runs) {
      progress(`stream: warming up ${run.peer.name} (${run.placement.name})`);
      const rate = await placedBurst(run, warmup);
      run.sent += warmup;
      // At least 10,000 messages a burst (2,000 in --quick, whose slices are a few dozen ms).
      run.burst = Math.round(Math.min(20_000_000, Math.max(options.quick ? 2_000 : 10_000, (rate * sliceMs) / 1000)));
    }
    // How long each session sat idle between its bursts, while the others had their turns.
    const pauses: number[] = [];
    for (let round = 0; round < options.rounds; round++) {
      progress(`stream: round ${round + 1}/${options.rounds} (${runs.length} sessions, ~${Math.round(sliceMs)} ms each)`);
      for (const run of rotated(runs, round)) {
        if (run.lastEnd !== undefined) pauses.push(performance.now() - run.lastEnd);
        run.rates.push(await placedBurst(run, run.burst));
        run.lastEnd = performance.now();
        run.sent += run.burst;
      }
    }
    if (pauses.length > 0) {
      const pause = median(pauses);
      const cold = pause > 2000 ? `: longer than the 2 s after which Bun's allocator hands back the memory a burst needs, in the actor processes, this process and the Bun fixtures alike, so every burst starts cold (docs/benchmarks.md, "The allocator's idle purge")` : "";
      notes.push(`stream: each session waited ${(pause / 1000).toFixed(2)} s (median) between its bursts while the others had their turns${cold}`);
    }
    for (const run of runs) {
      const received = await run.session.received();
      if (received !== run.sent) notes.push(`stream: ${run.peer.name} (${run.placement.name}) receiver counted ${received} of ${run.sent}: FIGURES INVALID`);
    }
    if (!notes.some((n) => n.includes("INVALID"))) notes.push("stream: every receiver counted exactly the messages sent");
  } finally {
    progressDone();
    for (const run of [...runs].reverse()) await disposeQuietly(run.session);
  }
  const rounds = runs.map((r) => ({ peer: r.peer.name, placement: r.placement.name, burst: r.burst, rates: r.rates.map(Math.round) }));
  return { figures: figuresOf(runs, placements, notes), notes, skipped, rounds };
}

/** The fields every figure of this scenario shares. */
const common = (placement: Placement) => ({ scenario: "stream", placement: placement.name, better: "higher" }) as const;

/**
 * Per placement and hermes window: envelopes/s and payload MB/s, each next to the raw socket's;
 * per peer its messages/s next to the raw socket's, and a note comparing each with hermes.
 */
function figuresOf(runs: readonly Run[], placements: readonly Placement[], notes: string[]): Figure[] {
  const figures: Figure[] = [];
  const payloadMBps = (rate: number) => (rate * RAW_128.length) / 1e6;
  for (const placement of placements) {
    const base = runs.find((r) => r.peer === BASELINE && r.placement === placement)!;
    const baseRate = median(base.rates);
    for (const run of runs.filter((r) => r.peer !== BASELINE && r.placement === placement)) {
      const rate = median(run.rates);
      const isHermes = HERMES.includes(run.peer);
      figures.push({
        ...common(placement),
        name: `${run.peer.name} ${isHermes ? "envelopes/s" : "msg/s"}`,
        unit: "msg/s",
        value: rate,
        baseline: { name: `${BASELINE.name} frames/s`, value: baseRate },
        ...(isHermes && { target: { minValue: MIN_ENVELOPES_PER_SEC } }),
        ...(ACTOR_PIPELINED.includes(run.peer) && { target: { minValue: MIN_PIPELINED_PER_SEC } }),
        detail: {
          payloadMBps: payloadMBps(rate),
          burst: run.burst,
          frameBytes: run.session.frameBytes,
          wireMBps: (rate * run.session.frameBytes) / 1e6,
          baselineWireMBps: (baseRate * base.session.frameBytes) / 1e6,
          roundsPerSec: run.rates.map(Math.round),
        },
      });
      // Payload MB/s is the rate times 128 B: a row of its own for hermes only, in detail for the peers.
      if (isHermes) figures.push({
        ...common(placement),
        name: `${run.peer.name} payload MB/s`,
        unit: "MB/s",
        value: payloadMBps(rate),
        baseline: { name: `${BASELINE.name} payload MB/s`, value: payloadMBps(baseRate) },
      });
    }
    const nats = runs.find((r) => r.peer === natsStream && r.placement === placement);
    for (const run of runs.filter((r) => nats && ACTOR_EVENTS.includes(r.peer) && r.placement === placement)) {
      figures.push({
        ...common(placement),
        name: `${run.peer.name} vs NATS`,
        unit: "msg/s",
        value: median(run.rates),
        baseline: { name: `${natsStream.name} msg/s`, value: median(nats!.rates) },
        target: { minRatio: MIN_EVENTS_RATIO_TO_NATS },
      });
    }
    const hermes = runs.find((r) => r.peer === HERMES_DEFAULT && r.placement === placement);
    const others = runs.filter((r) => r.placement === placement && !HERMES.includes(r.peer));
    if (hermes && others.length > 1) {
      const rate = median(hermes.rates);
      const text = `${(rate / 1e6).toFixed(2)} M msg/s`;
      notes.push(versusHermes("stream", placement.name, "msg/s", { name: hermes.peer.name, value: rate, text }, others.map((r) => ({ name: r.peer.name, value: median(r.rates) }))));
    }
  }
  return figures;
}

export const streamScenario: Scenario = {
  name: "stream",
  description: "one-way stream with acks and credit window, 128-byte payload: hermes Connection.send (window 1024, 4096, 8192) and peers (Bun/Node IPC, NATS, Redis) vs raw framed socket",
  run: runStream,
};

if (import.meta.main) await runStandalone(runStream, "stream");
