/**
 * Deno scenario: the same actors on Deno next to Bun, in one run (issue 14). Four figures per
 * runtime, each Deno figure with Bun's as its baseline:
 * - actor hop p50 and p99: a pinger actor and an echo actor, both on the runtime
 *   (bench/adapters/mesh-hop.ts), timed in the pinger, interleaved in rounds;
 * - events client → actor: a connectMesh client here sending 128-byte events with `await send`
 *   to a sink actor on the runtime, every one counted (bench/adapters/mesh-stream.ts);
 * - idle actor RSS and PSS: an echo actor on each runtime idle side by side, with an idle bare
 *   Bun and an idle bare Deno process as the floors;
 * - kill -9 → next answer: an echo actor on the runtime killed under sequential requests
 *   (restart.bench.ts's measureRestarts), with backoff 0 so each kill is one clean restart;
 *   Deno actors always start fresh (a standby host is a Bun process), so the Bun actor is also
 *   measured started fresh (HERMES_ACTOR_STANDBY=0) and with the standby (the default).
 * Placement: this process and the actors on cpu 0 (same core) for the hop, unpinned elsewhere.
 *
 * Run alone: `bun bench/deno.bench.ts [--quick]`.
 */
import { runStandalone } from "./lib/standalone.ts";
import { meshHopOn } from "./adapters/mesh-hop.ts";
import { meshEventsOn } from "./adapters/mesh-stream.ts";
import type { SampledRoundTripSession, StreamSession } from "./adapters/types.ts";
import { LatencyHistogram, median } from "./lib/histogram.ts";
import { spawnIdleBun } from "./lib/idle-bun.ts";
import { startBenchMesh } from "./lib/mesh.ts";
import { SAME_CORE, UNPINNED } from "./lib/placement.ts";
import { processMemory } from "./lib/proc-memory.ts";
import { progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, tempDir, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";
import { measureRestarts } from "./restart.bench.ts";
import { timedBurst } from "./stream.bench.ts";
import { findDeno } from "../src/supervisor/deno-runtime.ts";

type Runtime = "bun" | "deno";
const RUNTIMES: readonly Runtime[] = ["bun", "deno"];
const HOP_BATCH = 1000;

const ECHO_YAML = (name: string) => `mesh: { name: ${name}, events: false }
supervisor:
  intensity: 1000
  period_ms: 1000
  backoff: { initial_ms: 0, max_ms: 0, jitter: 0 }
  children:
    - { actor: bunecho, module: "{ACTORS}/echo.ts", runtime: bun }
    - { actor: denoecho, module: "{ACTORS}/echo.ts", runtime: deno }
`;

export async function runDeno(options: ScenarioOptions): Promise<ScenarioResult> {
  const deno = findDeno();
  if (!deno) return { figures: [], notes: [], skipped: ["deno: no Deno binary (npm install installs it; or set HERMES_DENO)"] };
  const figures: Figure[] = [];
  const notes: string[] = [];
  const common = (name: string, unit: string, better: "lower" | "higher") => ({ scenario: "deno", name, unit, better });
  using dir = tempDir();
  try {
    // Hop: both runtimes' meshes open at once, measured interleaved.
    const hops = new Map<Runtime, { session: SampledRoundTripSession; histogram: LatencyHistogram }>();
    for (const runtime of RUNTIMES) {
      progress(`deno: starting the ${runtime} hop mesh`);
      hops.set(runtime, { session: await meshHopOn(runtime).open({ dir: dir.path, placement: SAME_CORE }), histogram: new LatencyHistogram() });
    }
    try {
      for (const { session } of hops.values()) await session.roundTrips(options.quick ? 500 : 2000);
      const batches = Math.max(1, Math.round(options.durationMs / 4 / 50));
      for (let round = 0; round < options.rounds; round++) {
        progress(`deno: hop round ${round + 1}/${options.rounds}`);
        for (const runtime of rotated(RUNTIMES, round)) {
          const run = hops.get(runtime)!;
          for (let b = 0; b < Math.ceil(batches / options.rounds); b++) for (const ns of await run.session.roundTrips(options.quick ? HOP_BATCH / 2 : HOP_BATCH)) run.histogram.record(ns);
        }
      }
      const bun = hops.get("bun")!.histogram.summary();
      const den = hops.get("deno")!.histogram.summary();
      for (const [key, label] of [["p50", "p50"], ["p99", "p99"]] as const) {
        figures.push({ ...common(`actor hop ${label}, Deno`, "us", "lower"), placement: SAME_CORE.name, value: den[key], baseline: { name: `actor hop ${label}, Bun`, value: bun[key] }, detail: { samples: den.count, baselineSamples: bun.count } });
      }
    } finally {
      for (const { session } of hops.values()) await disposeQuietly(session);
    }

    // Events client → actor, each runtime's sink.
    const streams = new Map<Runtime, { session: StreamSession; rates: number[]; sent: number }>();
    for (const runtime of RUNTIMES) {
      progress(`deno: starting the ${runtime} sink`);
      streams.set(runtime, { session: await meshEventsOn(runtime).open({ dir: dir.path, placement: UNPINNED }), rates: [], sent: 0 });
    }
    try {
      const burst = options.quick ? 10_000 : 100_000;
      for (const run of streams.values()) await timedBurst(run.session, burst / 4);
      for (let round = 0; round < options.rounds; round++) {
        progress(`deno: stream round ${round + 1}/${options.rounds}`);
        for (const runtime of rotated(RUNTIMES, round)) {
          const run = streams.get(runtime)!;
          run.rates.push(await timedBurst(run.session, burst));
        }
      }
      const [bun, den] = RUNTIMES.map((r) => median(streams.get(r)!.rates));
      figures.push({ ...common("events client to actor, Deno sink", "msg/s", "higher"), placement: UNPINNED.name, value: den!, baseline: { name: "events client to actor, Bun sink", value: bun! } });
    } finally {
      for (const { session } of streams.values()) await disposeQuietly(session);
    }

    // Idle RSS and kill -9 → answer, one mesh with an echo actor on each runtime.
    // --quick leaves out the second mesh (a Bun actor handed to the standby host: a note only).
    for (const standby of options.quick ? ["0"] : ["0", "1"]) {
      const saved = process.env.HERMES_ACTOR_STANDBY;
      process.env.HERMES_ACTOR_STANDBY = standby;
      try {
        progress(`deno: restart mesh (${standby === "0" ? "Bun actors started fresh" : "Bun standby host"})`);
        await using mesh = await startBenchMesh(ECHO_YAML(`deno-restart-${standby}`));
        const client = await mesh.client();
        if (standby === "0") {
          await using bareBun = await spawnIdleBun("bare");
          await using bareDeno = await spawnIdleBun("bare", 10_000, deno);
          await new Promise((resolve) => setTimeout(resolve, Math.max(300, options.durationMs / 10)));
          const [bunActor, denoActor, bunFloor, denoFloor] = [mesh.pid("bunecho"), mesh.pid("denoecho"), bareBun.pid, bareDeno.pid].map(processMemory);
          figures.push(
            { ...common("idle actor RSS, Deno", "MB", "lower"), placement: UNPINNED.name, value: denoActor!.rss, baseline: { name: "idle actor RSS, Bun", value: bunActor!.rss }, detail: { pss: denoActor!.pss, baselinePss: bunActor!.pss, bareDenoRss: denoFloor!.rss, bareBunRss: bunFloor!.rss } },
            { ...common("idle bare Deno RSS", "MB", "lower"), placement: UNPINNED.name, value: denoFloor!.rss, baseline: { name: "idle bare Bun RSS", value: bunFloor!.rss } },
          );
          if (denoActor!.pss !== undefined && bunActor!.pss !== undefined) {
            figures.push({ ...common("idle actor PSS, Deno", "MB", "lower"), placement: UNPINNED.name, value: denoActor!.pss, baseline: { name: "idle actor PSS, Bun", value: bunActor!.pss } });
          }
        }
        const kills = options.quick ? 3 : 10;
        const samples = new Map<Runtime, number[]>();
        for (const runtime of standby === "0" ? RUNTIMES : (["bun"] as const)) {
          progress(`deno: kill -9 of the ${runtime} echo, ${kills} times`);
          const taken = await measureRestarts(mesh, client, { kills, spacingMs: 250, target: `${runtime}echo` });
          samples.set(runtime, taken.map((s) => s.stages.firstAnswer ?? Number.NaN).filter(Number.isFinite));
        }
        if (standby === "0") {
          figures.push({ ...common("kill -9 to next answer p50, Deno actor", "ms", "lower"), placement: UNPINNED.name, value: median(samples.get("deno")!), baseline: { name: "the same, Bun actor started fresh", value: median(samples.get("bun")!) }, detail: { denoMs: samples.get("deno"), bunMs: samples.get("bun") } });
        } else {
          const withStandby = figures.find((f) => f.name === "kill -9 to next answer p50, Deno actor");
          if (withStandby) notes.push(`deno: kill -9 to next answer p50 of a Bun actor handed to the standby host (the default): ${median(samples.get("bun")!).toFixed(1)} ms, against ${withStandby.value.toFixed(1)} ms for the Deno actor`);
        }
      } finally {
        if (saved === undefined) delete process.env.HERMES_ACTOR_STANDBY;
        else process.env.HERMES_ACTOR_STANDBY = saved;
      }
    }
  } finally {
    progressDone();
  }
  return { figures, notes };
}

export const denoScenario: Scenario = {
  name: "deno",
  description: "the same actors on Deno next to Bun: actor hop p50/p99, events client to actor, idle RSS/PSS, kill -9 to next answer",
  run: runDeno,
};

if (import.meta.main) await runStandalone(runDeno, "deno");
