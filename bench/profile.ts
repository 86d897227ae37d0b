/**
 * Drives only the hermes side of a transport scenario for a while, so a CPU profile shows
 * the hermes hot path and nothing else. Profile both processes:
 *
 *   BENCH_CHILD_BUN_FLAGS="--cpu-prof-md --cpu-prof-dir=/tmp/hm-prof" \
 *     bun --cpu-prof-md --cpu-prof-dir=/tmp/hm-prof bench/profile.ts stream [seconds] [window] [placement]
 *   ... bench/profile.ts pingpong [seconds] [placement]
 *
 * placement: "same" (default) or "cross". The child writes its profile when it is asked to
 * exit (bench/fixtures/fixture-control.ts).
 */
import { hermesRequest } from "./adapters/hermes-request.ts";
import { hermesStream } from "./adapters/hermes-stream.ts";
import { CROSS_CORE, pinSelf, SAME_CORE } from "./lib/placement.ts";
import { tempDir } from "./lib/scenario.ts";

const [scenario = "stream", secondsText = "5", ...rest] = process.argv.slice(2);
const seconds = Number(secondsText);
const placement = rest.includes("cross") ? CROSS_CORE : SAME_CORE;
const restore = pinSelf(0);
using dir = tempDir();
try {
  const end = Date.now() + seconds * 1000;
  if (scenario === "stream") {
    const window = Number(rest.find((r) => /^\d+$/.test(r)) ?? 1024);
    await using session = await hermesStream(window).open({ dir: dir.path, placement });
    let sent = 0;
    const t0 = Bun.nanoseconds();
    while (Date.now() < end) {
      await session.send(100_000);
      sent += 100_000;
    }
    const rate = (sent / (Bun.nanoseconds() - t0)) * 1e9;
    console.log(`stream window ${window} (${placement.name}): ${sent} envelopes, ${Math.round(rate)}/s; receiver counted ${await session.received()}`);
  } else if (scenario === "pingpong") {
    await using session = await hermesRequest.open({ dir: dir.path, placement });
    let trips = 0;
    const t0 = Bun.nanoseconds();
    while (Date.now() < end) {
      for (let i = 0; i < 1000; i++) await session.roundTrip();
      trips += 1000;
    }
    console.log(`pingpong (${placement.name}): ${trips} round trips, mean ${((Bun.nanoseconds() - t0) / trips / 1000).toFixed(1)} us`);
  } else {
    console.error(`unknown scenario ${scenario}: stream or pingpong`);
    process.exitCode = 2;
  }
} finally {
  restore();
}
