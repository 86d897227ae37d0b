/**
 * Footprint scenario: what an idle actor costs and how long a mesh takes to start.
 * - Start-up: `startMesh` of 1, 10 and 50 echo actors (a pool), timed until it resolves, which
 *   is when every actor is ready (children start in order, each waiting for the previous
 *   one's ready line); then every instance must answer a request. Baseline: as many bare Bun
 *   children spawned one after the other, each waited for until its first line.
 * - Memory: VmRSS (also RssAnon and, from smaps_rollup, Pss) from /proc of every actor of the largest mesh after
 *   it has been idle a while, against an idle `bun -e "setInterval(...)"` and the same with
 *   msgpackr, zod and hono loaded, started and read at the same moments.
 * Sizes run in a rotating order each round (--quick: 1 and 10 only). This process and the actors use both cores.
 *
 * Run alone: `bun bench/footprint.bench.ts [--quick]`.
 */
import { runStandalone } from "./lib/standalone.ts";
import { availableParallelism } from "node:os";
import { median } from "./lib/histogram.ts";
import { spawnIdleBun, type IdleBun } from "./lib/idle-bun.ts";
import { startBenchMesh, type BenchMesh } from "./lib/mesh.ts";
import { processMemory, type ProcessMemory } from "./lib/proc-memory.ts";
import { BOTH_CORES, pinSelf, taskset, UNPINNED } from "./lib/placement.ts";
import { progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

export const SIZES = [1, 10, 50] as const;
/** --quick leaves the 50-actor mesh to the full run (its start-up was a third of a quick run); memory is then read from the 10. */
export const QUICK_SIZES = [1, 10] as const;
/** Goal from the brief: at most 32 MB resident per idle actor. */
const RSS_MAX_MB = 32;

/** A mesh of one pool of `size` echo actors. */
export function footprintMeshYaml(name: string, size: number): string {
  return `mesh: { name: ${name} }
supervisor:
  children:
    - { actor: echo, module: "{ACTORS}/echo.ts", pool: ${size} }
`;
}

/** The addresses of a pool of `size` instances ("echo" alone, else "echo#i"). */
export function poolAddresses(size: number): string[] {
  return size === 1 ? ["echo"] : Array.from({ length: size }, (_, i) => `echo#${i}`);
}

/** Asks every instance once; resolves with how many answered. */
export async function countAnswering(mesh: BenchMesh, size: number, timeoutMs = 5000): Promise<number> {
  const client = await mesh.client();
  const results = await Promise.allSettled(poolAddresses(size).map((address) => client.request(address, { op: "count" }, { timeoutMs })));
  return results.filter((r) => r.status === "fulfilled").length;
}

/** Spawns `n` bare Bun children one after the other (each waited for); ms until the last printed. */
async function sequentialSpawns(n: number): Promise<number> {
  const children: IdleBun[] = [];
  const t0 = performance.now();
  try {
    for (let i = 0; i < n; i++) children.push(await spawnIdleBun("bare"));
    return performance.now() - t0;
  } finally {
    await Promise.all(children.map(disposeQuietly));
  }
}

interface Memory {
  actors: ProcessMemory[];
  bare: ProcessMemory;
  libs: ProcessMemory;
  size: number;
}

export async function runFootprint(options: ScenarioOptions): Promise<ScenarioResult> {
  const cores = availableParallelism();
  const placement = taskset() && cores > 1 ? BOTH_CORES : UNPINNED;
  const restore = placement === BOTH_CORES ? pinSelf(`0-${cores - 1}`) : () => {};
  const idleMs = options.durationMs;
  const sizes: readonly number[] = options.quick ? QUICK_SIZES : SIZES;
  const starts = new Map<number, number[]>(sizes.map((n) => [n, []]));
  const spawns = new Map<number, number[]>(sizes.map((n) => [n, []]));
  const answering = new Map<number, number[]>(sizes.map((n) => [n, []]));
  /** Of the largest mesh: ms from the previous instance's ready line to each one's, in start order. */
  const perInstance: number[] = [];
  let memory: Memory | undefined;
  const largest = Math.max(...sizes);
  try {
    for (let round = 0; round < options.rounds; round++) {
      for (const size of rotated(sizes, round)) {
        progress(`footprint: round ${round + 1}/${options.rounds}: ${size} bare Bun children`);
        spawns.get(size)!.push(await sequentialSpawns(size));
        progress(`footprint: round ${round + 1}/${options.rounds}: mesh of ${size} echo actors`);
        const readyAt: number[] = [];
        const t0 = performance.now();
        await using mesh = await startBenchMesh(footprintMeshYaml(`footprint-${size}`, size), {
          onMark: (mark) => mark.kind === "event" && mark.event.type === "started" && mark.event.child !== undefined && readyAt.push(mark.at),
        });
        starts.get(size)!.push(performance.now() - t0);
        if (size === largest) perInstance.push(...readyAt.map((at, i) => at - (i === 0 ? t0 : readyAt[i - 1]!)));
        if (size === largest && round === options.rounds - 1) {
          // The baselines start now and idle as long as the actors before all are read.
          await using bare = await spawnIdleBun("bare");
          await using libs = await spawnIdleBun("libs");
          progress(`footprint: ${size} actors idle for ${Math.round(idleMs)} ms`);
          await Bun.sleep(idleMs);
          memory = { actors: mesh.pids().map(processMemory), bare: processMemory(bare.pid), libs: processMemory(libs.pid), size };
        }
        answering.get(size)!.push(await countAnswering(mesh, size));
      }
    }
  } finally {
    progressDone();
    restore();
  }
  const figures: Figure[] = [];
  for (const size of sizes) {
    figures.push({
      scenario: "footprint", name: `mesh start-up, ${size} actor${size === 1 ? "" : "s"}`, placement: placement.name, unit: "ms",
      value: median(starts.get(size)!), better: "lower",
      baseline: { name: `${size} bare Bun spawn${size === 1 ? "" : "s"} to first line`, value: median(spawns.get(size)!) },
      detail: { startsMs: starts.get(size), spawnsMs: spawns.get(size), answering: answering.get(size) },
    });
  }
  const answered = Math.min(...answering.get(largest)!);
  figures.push({
    scenario: "footprint", name: `actors answering after start-up, of ${largest}`, placement: placement.name, unit: "actors",
    value: answered, better: "higher", target: { minValue: largest },
  });
  const notes: string[] = [];
  if (memory) {
    const { actors, bare, libs } = memory;
    const rss = actors.map((m) => m.rss);
    const of = (key: keyof ProcessMemory) => median(actors.flatMap((m) => (m[key] === undefined ? [] : [m[key]!])));
    figures.push(
      { scenario: "footprint", name: `idle actor RSS median (${actors.length} actors)`, placement: placement.name, unit: "MB", value: median(rss), better: "lower",
        baseline: { name: "idle bare Bun RSS", value: bare.rss }, target: { maxValue: RSS_MAX_MB }, detail: { rssMB: rss } },
      { scenario: "footprint", name: "idle actor RSS max", placement: placement.name, unit: "MB", value: Math.max(...rss), better: "lower",
        baseline: { name: "idle bare Bun RSS", value: bare.rss } },
      { scenario: "footprint", name: "idle actor private RSS (RssAnon) median", placement: placement.name, unit: "MB", value: of("anon"), better: "lower",
        baseline: { name: "idle bare Bun RssAnon", value: bare.anon } },
      { scenario: "footprint", name: "bun + msgpackr, zod, hono RSS", placement: placement.name, unit: "MB", value: libs.rss, better: "lower",
        baseline: { name: "idle bare Bun RSS", value: bare.rss }, detail: { anonMB: libs.anon, fileMB: libs.file, pssMB: libs.pss } },
    );
    if (bare.pss !== undefined && actors.every((m) => m.pss !== undefined)) {
      figures.push({ scenario: "footprint", name: `idle actor PSS median (${actors.length} actors)`, placement: placement.name, unit: "MB", value: of("pss"), better: "lower",
        baseline: { name: "idle bare Bun PSS", value: bare.pss }, detail: { pssMB: actors.map((m) => m.pss) } });
      // Shared pages are divided among every process mapping them (these actors, the baselines,
      // this harness), so a PSS is read against the bare Bun's of the same moment; the actors'
      // sum is what they cost together.
      const total = actors.reduce((sum, m) => sum + m.pss!, 0);
      notes.push(
        `footprint: PSS (shared pages divided among the processes mapping them): actor median ${of("pss").toFixed(1)} MB, ` +
          `${actors.length} actors together ${total.toFixed(1)} MB, bare Bun ${bare.pss.toFixed(1)} MB, ` +
          `with msgpackr, zod, hono ${libs.pss?.toFixed(1) ?? "n/a"} MB`,
      );
    }
    notes.push(
      `footprint: RSS = private (RssAnon) + file-backed pages (RssFile, mostly the Bun executable, shared by every Bun process): ` +
        `actor ${median(rss).toFixed(1)} = ${of("anon").toFixed(1)} + ${of("file").toFixed(1)} MB, bare Bun ${bare.rss.toFixed(1)} = ${bare.anon.toFixed(1)} + ${bare.file.toFixed(1)} MB, ` +
        `with msgpackr, zod, hono ${libs.rss.toFixed(1)} = ${libs.anon.toFixed(1)} + ${libs.file.toFixed(1)} MB; read after ${Math.round(idleMs)} ms idle`,
    );
  }
  for (const size of sizes.filter((s) => s !== largest)) {
    notes.push(`footprint: ${size}-actor mesh: ${answering.get(size)!.join(", ")} of ${size} answered (per round)`);
  }
  if (perInstance.length > 0) {
    const step = Math.max(1, Math.floor(largest / 5));
    const bands = [];
    for (let from = 0; from < largest; from += step) {
      bands.push(`#${from}-${Math.min(largest, from + step) - 1}: ${median(perInstance.filter((_, i) => i % largest >= from && i % largest < from + step)).toFixed(1)}`);
    }
    notes.push(`footprint: ${largest}-actor mesh, ms from one instance ready to the next, median by position in the pool (${bands.join(", ")}): a later instance starts slower`);
  }
  return { figures, notes, rounds: { starts: Object.fromEntries(starts), spawns: Object.fromEntries(spawns), answering: Object.fromEntries(answering), memory } };
}

export const footprintScenario: Scenario = {
  name: "footprint",
  description: "RSS of idle echo actors vs an idle Bun process; start-up of 1, 10, 50-actor meshes vs bare Bun spawns",
  run: runFootprint,
};

if (import.meta.main) await runStandalone(runFootprint, "footprint", false);
