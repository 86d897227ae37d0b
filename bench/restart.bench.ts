/**
 * Restart scenario: from `kill -9` of an actor process to the first successful answer, with the
 * mesh's default settings, after a quiet period. The mesh has eight echo actors (echo0..echo7,
 * bench/actors/lone-echo.ts: no capability, so lone instances, whose restart the mesh hears of
 * once), each alone under its own supervisor with every default (one_for_one, intensity 1 per 5000
 * ms, backoff 10 to 1000 ms, jitter 0.2); they are killed in turn, each more than its
 * supervisor's period after its previous kill, so every restart is a child's first in its
 * period: a one-off crash, as in production. Quiet means the whole mesh: each kill also waits
 * until the other processes of the mesh (the other actors, the standby host still starting
 * after the previous restart) are at rest, at most 2 s. A client in this process sends sequential
 * requests to the actor about to be killed without pause. Right after a request is issued
 * (before its bytes are even written) the actor is killed with SIGKILL; every request after
 * that times out quickly (25 ms) and is sent again, and the first one answered, by the
 * restarted process, ends the sample. The request in flight at the kill is redelivered by the
 * mesh after the restart and usually is that first answer.
 *
 * Each restart is broken down with the supervisor's events, which this process sees first-hand
 * (the supervisor runs here), and the times of the start in the "started" event's `startup`
 * (the supervisor's record, and what the actor host reports in its loaded line): exit seen,
 * restart decided (and its backoff), new process spawned (or a standby host handed the
 * start), host code loaded (Bun started; for a standby, its assignment read), actor module
 * imported, registered on the control socket, ready, the client told, first answer.
 * Throughput: requests completed in the window around each kill against the steady rate just
 * before it. Baseline: a bare Bun child, spawn to its first line of output, measured in the
 * same rounds.
 *
 * Placements: same core and both cores (--quick: both cores only, three kills).
 *
 * Run alone: `bun bench/restart.bench.ts [--quick]`.
 */
import { runStandalone } from "./lib/standalone.ts";
import { availableParallelism } from "node:os";
import type { MeshClient } from "../src/actor/connect-mesh.ts";
import { DEFAULT_PERIOD_MS } from "../src/supervisor/restart-intensity.ts";
import { childrenQuiet } from "./lib/cpu-time.ts";
import { median } from "./lib/histogram.ts";
import { spawnIdleBun } from "./lib/idle-bun.ts";
import { startBenchMesh, type BenchMesh, type MeshMark } from "./lib/mesh.ts";
import { PAYLOAD_128 } from "./lib/payload.ts";
import { BOTH_CORES, pinSelf, SAME_CORE, taskset, UNPINNED, type Placement } from "./lib/placement.ts";
import { progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

/** The goal: kill -9 to first answer with default settings, p50 at most 20 ms. */
const P50_MAX_MS = 20;
/** Per-request timeout while the actor is down: short, so a fresh request is always on its way. */
export const REQUEST_TIMEOUT_MS = 25;
/** Actors killed in turn: enough that each gets a quiet period while the others are killed. */
export const VICTIMS = 8;
/** Warm traffic before each kill; also the throughput window around it. */
const SPACING_MS = 250;
/** Beyond the period, so that the restart is surely the first in it. */
const QUIET_MARGIN_MS = 200;
/** The longest a kill waits for the rest of the mesh to be at rest (measureRestarts' `quiet`). */
const QUIET_MAX_WAIT_MS = 2000;

/**
 * The scenario's mesh: `victims` echo actors (bench/actors/lone-echo.ts: no capability, so
 * none shares one with another), each alone under its own supervisor that sets nothing (every
 * default), so each can be killed once per period without its supervisor giving up.
 */
export function quietMeshYaml(name: string, victims = VICTIMS): string {
  const subtrees = Array.from({ length: victims }, (_, i) =>
    `    - supervisor: s${i}\n      children:\n        - { actor: echo${i}, module: "{BENCH_ACTORS}/lone-echo.ts" }`).join("\n");
  return `mesh: { name: ${name} }\nsupervisor:\n  children:\n${subtrees}\n`;
}

/**
 * A mesh of one echo actor that can be killed back to back (intensity 1000 per 100 ms, backoff
 * 1 to 5 ms without jitter): for checking the harness with kills a few hundred ms apart.
 */
export function restartMeshYaml(name: string): string {
  return `mesh: { name: ${name} }
supervisor:
  strategy: one_for_one
  intensity: 1000
  period_ms: 100
  backoff: { initial_ms: 1, max_ms: 5, jitter: 0 }
  children:
    - { actor: echo, module: "{ACTORS}/echo.ts" }
`;
}

/** The stages of one restart, in ms after the kill (undefined when the mark was not seen). */
export interface RestartStages {
  exitSeen?: number;
  restartDecided?: number;
  spawned?: number;
  /** From the actor host's own report (its loaded line), placed after the spawn. */
  loaded?: number;
  imported?: number;
  registered?: number;
  ready?: number;
  clientTold?: number;
  firstAnswer: number;
}

/** Stage labels in order, with what each step covers. */
export const STAGES: ReadonlyArray<[keyof RestartStages, string]> = [
  ["exitSeen", "exit seen by the supervisor"],
  ["restartDecided", "restart decided"],
  ["spawned", "new process spawned (after the backoff)"],
  ["loaded", "host code loaded (Bun started, bundle run; a standby host: assignment read)"],
  ["imported", "actor module imported"],
  ["registered", "registered on the control socket"],
  ["ready", "ready on the control socket (listening, init done)"],
  ["clientTold", "client told it is healthy"],
  ["firstAnswer", "first answer at the client"],
];

export interface RestartSample {
  pidBefore: number;
  pidAfter: number | undefined;
  /** Backoff the supervisor chose, ms. */
  delayMs: number | undefined;
  /** Restarts within the supervisor's period, this one included (1: a first restart). */
  recentRestarts?: number;
  stages: RestartStages;
  /** Ms from the last answer before the kill to the first after it. */
  gapMs: number;
  /** Requests completed in [kill - window/5, kill + 4 window/5), and in the steady part before the kill. */
  windowCompleted: number;
  steadyCompleted: number;
  /** Requests that failed (timed out) during this restart. */
  failed: number;
  /** Ms the kill waited past its spacing for the rest of the mesh to be at rest (`quiet`). */
  quietWaitMs: number;
}

export interface RestartOptions {
  kills: number;
  /** Ms between a first answer and the next kill; also the throughput window around a kill. */
  spacingMs: number;
  target?: string;
  requestTimeoutMs?: number;
  /** Give up (throw) when no answer came this long after a kill. Default 10 s. */
  maxWaitMs?: number;
  /**
   * Asked before each kill once its spacing has passed: the kill waits (the warm traffic going
   * on) until it says true, or QUIET_MAX_WAIT_MS went by. Default: no wait.
   */
  quiet?: () => boolean;
  onKill?: (index: number) => void;
}

interface Pending {
  killAt: number;
  pidBefore: number;
  lastBefore: number;
  marks: MeshMark[];
  quietWaitMs: number;
  clientTold?: number;
  firstAnswer?: number;
  failed: number;
}

/**
 * Kills the target `kills` times under continuous sequential traffic from `client`, and
 * returns one sample per restart. The first kill comes after one spacing of warm traffic; the
 * traffic goes on until the last kill's window has passed.
 */
export async function measureRestarts(mesh: BenchMesh, client: MeshClient, options: RestartOptions): Promise<RestartSample[]> {
  const target = options.target ?? "echo";
  const timeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const maxWaitMs = options.maxWaitMs ?? 10_000;
  const window = options.spacingMs;
  const completions: number[] = [];
  const done: Pending[] = [];
  let current: Pending | undefined;
  // Marks go to the latest kill until the next one.
  let collecting: Pending | undefined;
  const unwatch = mesh.watch((mark) => collecting?.marks.push(mark));
  const unwatchClient = client.registry.onUpdate((update) => {
    if (current && current.clientTold === undefined && update.type === "patch" && update.address === target && update.changes.health === "healthy") {
      current.clientTold = performance.now();
    }
  });
  let killDue = performance.now() + window;
  let endAt = Infinity;
  try {
    while (performance.now() < endAt) {
      const request = client.request(target, PAYLOAD_128, { timeoutMs });
      const sentAt = performance.now();
      if (!current && done.length < options.kills && sentAt >= killDue && (!options.quiet || options.quiet() || sentAt - killDue > QUIET_MAX_WAIT_MS)) {
        // The request just issued is not written yet (writes flush on a microtask): only the
        // restarted process can answer it.
        options.onKill?.(done.length);
        const pidBefore = mesh.pid(target);
        current = collecting = { killAt: performance.now(), pidBefore, lastBefore: completions.at(-1) ?? sentAt, marks: [], failed: 0, quietWaitMs: sentAt - killDue };
        process.kill(pidBefore, "SIGKILL");
      }
      try {
        await request;
      } catch {
        if (current && performance.now() - current.killAt > maxWaitMs) {
          throw new Error(`${target} did not answer within ${maxWaitMs} ms of kill -9 ${done.length + 1} (output: ${mesh.output.slice(-5).join(" | ") || "none"})`);
        }
        if (current) current.failed++;
        // A refusal rather than a timeout must not spin the loop while the actor is down.
        if (performance.now() - sentAt < 1) await Bun.sleep(1);
        continue;
      }
      const at = performance.now();
      completions.push(at);
      if (current && at > current.killAt) {
        current.firstAnswer = at;
        done.push(current);
        current = undefined;
        killDue = at + window;
        if (done.length === options.kills) endAt = done.at(-1)!.killAt + (4 * window) / 5;
      }
    }
  } finally {
    unwatch();
    unwatchClient();
  }
  return done.map((p) => toSample(p, completions, window, target));
}

function toSample(p: Pending, completions: number[], window: number, target: string): RestartSample {
  const since = (at: number | undefined) => (at === undefined ? undefined : at - p.killAt);
  const event = (type: string) => p.marks.find((m) => m.kind === "event" && m.event.type === type && m.event.child === target);
  const restarting = event("restarting");
  const started = event("started");
  // The start's steps are in ms after its start() call, which resolved (the "started" event) at
  // `ready`: the registry's announcements cannot tell, as a lone instance's restart is announced once.
  const startup = started?.kind === "event" && started.event.type === "started" ? started.event.startup : undefined;
  const calledAt = started && startup?.ready !== undefined ? started.at - startup.ready : undefined;
  const step = (key: string) => (calledAt !== undefined && startup?.[key] !== undefined ? since(calledAt + startup[key]!) : undefined);
  const count = (from: number, to: number) => completions.filter((t) => t >= from && t < to).length;
  return {
    pidBefore: p.pidBefore,
    pidAfter: started?.kind === "event" && started.event.type === "started" ? started.event.pid : undefined,
    delayMs: restarting?.kind === "event" && restarting.event.type === "restarting" ? restarting.event.delayMs : undefined,
    recentRestarts: restarting?.kind === "event" && restarting.event.type === "restarting" ? restarting.event.recentRestarts : undefined,
    stages: {
      exitSeen: since(event("exited")?.at),
      restartDecided: since(restarting?.at),
      spawned: step("spawned"),
      loaded: step("loaded"),
      imported: step("imported"),
      registered: step("registered"),
      ready: step("ready"),
      clientTold: since(p.clientTold),
      firstAnswer: p.firstAnswer! - p.killAt,
    },
    gapMs: p.firstAnswer! - p.lastBefore,
    windowCompleted: count(p.killAt - window / 5, p.killAt + (4 * window) / 5),
    steadyCompleted: count(p.killAt - window / 5, p.killAt),
    failed: p.failed,
    quietWaitMs: p.quietWaitMs,
  };
}

/**
 * Same core (everything on cpu 0; respawned actors inherit it) and both cores (nothing pinned);
 * --quick measures both cores only, where there are two.
 */
function restartPlacements(quick: boolean): Placement[] {
  if (!taskset()) return [UNPINNED];
  if (availableParallelism() === 1) return [SAME_CORE];
  return quick ? [BOTH_CORES] : [SAME_CORE, BOTH_CORES];
}

/** Runs `fn` with this process (and so every actor it spawns meanwhile) on the placement's cpus. */
async function placed<T>(placement: Placement, fn: () => Promise<T>): Promise<T> {
  const restore = placement === SAME_CORE ? pinSelf(0) : placement === BOTH_CORES ? pinSelf(`0-${availableParallelism() - 1}`) : () => {};
  try {
    return await fn();
  } finally {
    restore();
  }
}

interface Run {
  placement: Placement;
  mesh: BenchMesh;
  client: MeshClient;
  samples: RestartSample[];
  /** Bare Bun child, spawn to first line, ms (the baseline). */
  spawns: number[];
  /** performance.now() of each victim's last kill. */
  lastKill: number[];
  next: number;
}

export async function runRestart(options: ScenarioOptions): Promise<ScenarioResult> {
  const placements = restartPlacements(options.quick);
  // --quick: three victims once each (a smoke run's median; the full run kills each of the eight three times).
  const killsPer = options.quick ? 3 : 3 * VICTIMS;
  const rounds = Math.max(1, Math.min(options.rounds, killsPer));
  const spacingMs = SPACING_MS;
  const notes: string[] = [];
  if (placements[0] === UNPINNED) notes.push("restart: taskset (util-linux) not found: processes are not pinned");
  const runs: Run[] = [];
  try {
    for (const placement of placements) {
      progress(`restart: starting a mesh (${placement.name})`);
      const mesh = await placed(placement, () => startBenchMesh(quietMeshYaml(`restart-${placement.name.replace(/[^a-z0-9]+/g, "-")}`)));
      runs.push({ placement, mesh, client: await mesh.client(), samples: [], spawns: [], lastKill: Array<number>(VICTIMS).fill(-Infinity), next: 0 });
    }
    for (let round = 0; round < rounds; round++) {
      const kills = Math.floor(killsPer / rounds) + (round < killsPer % rounds ? 1 : 0);
      for (const run of rotated(runs, round)) {
        await placed(run.placement, async () => {
          for (let i = 0; i < kills; i++) {
            const victim = run.next++ % VICTIMS;
            // The kill comes one spacing from now: not before the victim's period has passed.
            const wait = run.lastKill[victim]! + DEFAULT_PERIOD_MS + QUIET_MARGIN_MS - (performance.now() + spacingMs);
            if (wait > 0) await Bun.sleep(wait);
            const [sample] = await measureRestarts(run.mesh, run.client, {
              kills: 1,
              spacingMs,
              target: `echo${victim}`,
              quiet: childrenQuiet({ except: () => run.mesh.pid(`echo${victim}`) }),
              onKill: () => {
                run.lastKill[victim] = performance.now();
                progress(`restart: round ${round + 1}/${rounds}, ${run.placement.name}: kill -9 ${run.samples.length + 1}/${killsPer} (echo${victim})`);
              },
            });
            run.samples.push(sample!);
          }
          for (let i = 0; i < kills; i++) {
            await using idle = await spawnIdleBun("bare");
            run.spawns.push(idle.readyMs);
          }
        });
      }
    }
  } finally {
    progressDone();
    for (const run of [...runs].reverse()) await disposeQuietly(run.mesh);
  }
  const figures: Figure[] = [];
  const policy = `default settings (intensity 1 per ${DEFAULT_PERIOD_MS} ms, backoff 10 to 1000 ms, jitter 0.2), each kill more than ${DEFAULT_PERIOD_MS} ms after the victim's previous one`;
  for (const run of runs) {
    const { placement, samples } = run;
    const totals = samples.map((s) => s.stages.firstAnswer);
    const delays = samples.flatMap((s) => (s.delayMs === undefined ? [] : [s.delayMs]));
    const firsts = samples.filter((s) => s.recentRestarts === 1).length;
    const quietWaits = samples.map((s) => s.quietWaitMs);
    const detail = { restarts: samples.length, settings: policy, firstInPeriod: firsts, backoffMsP50: median(delays), requestTimeoutMs: REQUEST_TIMEOUT_MS, quietWaitMsP50: median(quietWaits) };
    for (const [label, q] of [["p50", 50], ["p90", 90], ["max", 100]] as const) {
      figures.push({
        scenario: "restart", name: `kill -9 to first answer ${label}${label === "p50" ? " (defaults, quiet)" : ""}`, placement: placement.name, unit: "ms", value: quantile(totals, q), better: "lower",
        baseline: { name: `bare Bun spawn to first line ${label}`, value: quantile(run.spawns, q) },
        ...(label === "p50" && { target: { maxValue: P50_MAX_MS }, detail }),
      });
    }
    const steady = sum(samples.map((s) => s.steadyCompleted)) / ((samples.length * spacingMs) / 5 / 1000);
    const around = sum(samples.map((s) => s.windowCompleted)) / ((samples.length * spacingMs) / 1000);
    figures.push({
      scenario: "restart", name: `requests/s in the ${Math.round(spacingMs)} ms around a kill`, placement: placement.name, unit: "req/s", value: around, better: "higher",
      baseline: { name: "steady requests/s", value: steady },
      detail: { lostPerRestart: (steady * spacingMs) / 1000 - around * (spacingMs / 1000), gapMsP50: median(samples.map((s) => s.gapMs)) },
    });
    const pidsChanged = samples.filter((s) => s.pidAfter !== undefined && s.pidAfter !== s.pidBefore).length;
    notes.push(
      `restart (${placement.name}): ${samples.length} restarts, ${pidsChanged} with a new pid, ${firsts} the first in their period; ${policy}; backoff chosen p50 ${median(delays)} ms, max ${Math.max(0, ...delays)} ms; ` +
        `waited for the rest of the mesh to be at rest p50 ${median(quietWaits).toFixed(0)} ms, max ${Math.max(0, ...quietWaits).toFixed(0)} ms (${quietWaits.filter((w) => w > QUIET_MAX_WAIT_MS).length} kills after the ${QUIET_MAX_WAIT_MS} ms limit); ` +
        `gap between answers p50 ${median(samples.map((s) => s.gapMs)).toFixed(1)} ms, about ${Math.round((steady * median(samples.map((s) => s.gapMs))) / 1000)} requests not served per restart at the steady ${Math.round(steady)} req/s`,
    );
    notes.push(`restart (${placement.name}) breakdown, p50 ms after the kill [step]: ${breakdown(samples)}`);
  }
  return { figures, notes, rounds: runs.map((r) => ({ placement: r.placement.name, spacingMs, samples: r.samples, spawnsMs: r.spawns })) };
}

/** "exit seen 3.0 [+3.0], restart decided 3.1 [+0.1], ..." from the medians of each stage. */
export function breakdown(samples: readonly RestartSample[]): string {
  const parts: string[] = [];
  let previous = 0;
  for (const [key, label] of STAGES) {
    const values = samples.flatMap((s) => (s.stages[key] === undefined ? [] : [s.stages[key]!]));
    if (values.length === 0) continue;
    const at = median(values);
    parts.push(`${label} ${at.toFixed(1)} [${at >= previous ? "+" : ""}${(at - previous).toFixed(1)}]`);
    previous = at;
  }
  return parts.join(", ");
}

/** The q-th percentile (nearest rank) of `values`; 0 for none. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((q / 100) * sorted.length) - 1))]!;
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

export const restartScenario: Scenario = {
  name: "restart",
  description: "kill -9 of an echo actor under load (default settings, after a quiet period) to its first successful answer, with the restart broken down; vs a bare Bun spawn",
  run: runRestart,
};

if (import.meta.main) await runStandalone(runRestart, "restart");
