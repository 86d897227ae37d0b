/**
 * Round trips right after a pause, across cores: what the first messages cost once both ends
 * sat idle, for the raw socket (adapters/raw-echo.ts) and the actor path (a connectMesh client
 * calling the echo actor, adapters/mesh-request.ts), taking turns. This process runs on cpu 0,
 * the echo on cpu 1. After a warm-up, each round waits `pause` ms, then times blocks of round
 * trips in a row (the 1st, the 2nd to 10th, the 11th to 50th, the 51st to 100th, the 101st to
 * 500th), each block's mean. The harness's pingpong and hop scenarios let a session sit idle for
 * about a second while the others run, so their p99 across cores is read from these first round
 * trips (docs/benchmarks.md, "What the machine sets").
 *
 * Run: `bun bench/after-idle.ts [pause ms] [rounds]` (default 1100, 6).
 */
import { meshRequest } from "./adapters/mesh-request.ts";
import { rawEcho } from "./adapters/raw-echo.ts";
import type { RoundTripPeer, RoundTripSession } from "./adapters/types.ts";
import { availablePlacements, CROSS_CORE, pinSelf } from "./lib/placement.ts";
import { disposeQuietly, tempDir } from "./lib/scenario.ts";

const [pauseMs = 1100, rounds = 6] = process.argv.slice(2).map(Number);
/** Round trips per block, in the order they are timed after each pause. */
const BLOCKS = [1, 9, 40, 50, 400];
const LABELS = ["1st", "2-10", "11-50", "51-100", "101-500"];
const WARMUP = 20_000;

if (!availablePlacements().placements.includes(CROSS_CORE)) {
  console.error("after-idle: needs two cores and taskset (util-linux)");
  process.exit(2);
}
pinSelf(0);
using dir = tempDir();
const peers: RoundTripPeer[] = [rawEcho, meshRequest];
const sessions: RoundTripSession[] = [];
/** means[peer][block]: one mean (us) per round. */
const means: number[][][] = peers.map(() => BLOCKS.map(() => []));
try {
  for (const peer of peers) sessions.push(await peer.open({ dir: dir.path, placement: CROSS_CORE }));
  for (const session of sessions) for (let i = 0; i < WARMUP; i++) await session.roundTrip();
  for (let round = 0; round < rounds; round++) {
    for (let p = 0; p < peers.length; p++) {
      await Bun.sleep(pauseMs);
      const session = sessions[p]!;
      for (let b = 0; b < BLOCKS.length; b++) {
        const t0 = Bun.nanoseconds();
        for (let i = 0; i < BLOCKS[b]!; i++) await session.roundTrip();
        means[p]![b]!.push((Bun.nanoseconds() - t0) / 1000 / BLOCKS[b]!);
      }
    }
  }
} finally {
  for (const session of sessions.reverse()) await disposeQuietly(session);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`round trips after a ${pauseMs} ms pause, across cores, ${rounds} rounds: median of the rounds' block means (min to max), us`);
console.log(["", ...LABELS].map((s, i) => (i === 0 ? s.padEnd(26) : s.padStart(20))).join(""));
peers.forEach((peer, p) => {
  const cells = means[p]!.map((xs) => `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`.padStart(20));
  console.log(peer.name.padEnd(26) + cells.join(""));
});
