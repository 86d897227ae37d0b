/**
 * Drives one contender of a transport scenario (hermes by default) for a while, so a CPU
 * profile shows its hot path and nothing else. Profile both processes:
 *
 *   BENCH_CHILD_BUN_FLAGS="--cpu-prof-md --cpu-prof-dir=/tmp/hm-prof" \
 *     bun --cpu-prof-md --cpu-prof-dir=/tmp/hm-prof bench/profile.ts stream [seconds] [window] [placement]
 *   ... bench/profile.ts pingpong [seconds] [placement] [raw]
 *   BUN_OPTIONS="--cpu-prof-md --cpu-prof-dir=/tmp/hm-prof" bun bench/profile.ts hop [seconds] [placement]
 *
 * hop drives the actor hop (pinger actor -> echo actor in a real mesh); the actor processes are
 * spawned by the supervisor, so their Bun flags come from BUN_OPTIONS (which this process also
 * reads); each writes its profile when the mesh stops it.
 * placement: "same" (default) or "cross"; "raw" drives the raw-socket baseline instead, to
 * compare profiles. The child writes its profile when asked to exit (fixtures/fixture-control.ts).
 */
import { hermesRequest } from "./adapters/hermes-request.ts";
import { hermesStream } from "./adapters/hermes-stream.ts";
import { meshHop } from "./adapters/mesh-hop.ts";
import { rawEcho } from "./adapters/raw-echo.ts";
import { rawStream } from "./adapters/raw-stream.ts";
import { machineBusyTicks, TICKS_PER_SECOND } from "./lib/interference.ts";
import { CROSS_CORE, pinSelf, SAME_CORE } from "./lib/placement.ts";
import { tempDir } from "./lib/scenario.ts";

const [scenario = "stream", secondsText = "5", ...rest] = process.argv.slice(2);
const seconds = Number(secondsText);
const placement = rest.includes("cross") ? CROSS_CORE : SAME_CORE;
const raw = rest.includes("raw");

/** CPU time per operation of this process and of everything else (the peer, on a quiet machine). */
function cpuMeter(): (ops: number) => string {
  const own0 = process.cpuUsage();
  const busy0 = machineBusyTicks();
  return (ops) => {
    const own = process.cpuUsage(own0);
    const ownUs = own.user + own.system;
    const allUs = ((machineBusyTicks() - busy0) / TICKS_PER_SECOND) * 1e6;
    return `CPU per op: this process ${(ownUs / ops).toFixed(2)} us (${((own.system / ops)).toFixed(2)} us in the kernel), peer and rest ${(Math.max(0, allUs - ownUs) / ops).toFixed(2)} us`;
  };
}
const restore = pinSelf(0);
using dir = tempDir();
try {
  const end = Date.now() + seconds * 1000;
  if (scenario === "stream") {
    const window = Number(rest.find((r) => /^\d+$/.test(r)) ?? 1024);
    await using session = await (raw ? rawStream : hermesStream(window)).open({ dir: dir.path, placement });
    let sent = 0;
    const t0 = Bun.nanoseconds();
    const cpu = cpuMeter();
    while (Date.now() < end) {
      await session.send(100_000);
      sent += 100_000;
    }
    const rate = (sent / (Bun.nanoseconds() - t0)) * 1e9;
    console.log(`stream ${raw ? "raw" : `window ${window}`} (${placement.name}): ${sent} messages, ${Math.round(rate)}/s; receiver counted ${await session.received()}; ${cpu(sent)}`);
  } else if (scenario === "pingpong") {
    await using session = await (raw ? rawEcho : hermesRequest).open({ dir: dir.path, placement });
    let trips = 0;
    const t0 = Bun.nanoseconds();
    const cpu = cpuMeter();
    while (Date.now() < end) {
      for (let i = 0; i < 1000; i++) await session.roundTrip();
      trips += 1000;
    }
    console.log(`pingpong ${raw ? "raw" : "hermes"} (${placement.name}): ${trips} round trips, mean ${((Bun.nanoseconds() - t0) / trips / 1000).toFixed(1)} us; ${cpu(trips)}`);
  } else if (scenario === "hop") {
    await using session = await meshHop.open({ dir: dir.path, placement });
    await session.roundTrips(2000); // warm-up
    let hops = 0;
    let totalNs = 0;
    const cpu = cpuMeter();
    while (Date.now() < end) {
      for (const ns of await session.roundTrips(2000)) totalNs += ns;
      hops += 2000;
    }
    console.log(`hop (${placement.name}): ${hops} actor-to-actor round trips, mean ${(totalNs / hops / 1000).toFixed(1)} us (timed in the pinger); ${cpu(hops)}`);
  } else {
    console.error(`unknown scenario ${scenario}: stream, pingpong or hop`);
    process.exitCode = 2;
  }
} finally {
  restore();
}
