/**
 * CPU placement of the two processes of a measurement. On this 2-core machine a wake-up on the
 * other core costs about 35 us, so round trips are bimodal unless placement is controlled
 * (DESIGN.md). The harness pins itself to cpu 0 and each child to cpu 0 or cpu 1 with taskset
 * (util-linux), and every figure says which placement it used.
 */
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";

/** Where the parent and the child of a measurement run. */
export interface Placement {
  /** "same core", "cross core", or "unpinned" when taskset is missing. */
  readonly name: string;
  /** CPU of the child process; undefined when not pinned. */
  readonly childCpu?: number;
}

export const SAME_CORE: Placement = { name: "same core", childCpu: 0 };
export const CROSS_CORE: Placement = { name: "cross core", childCpu: 1 };
export const UNPINNED: Placement = { name: "unpinned" };
/** Both processes free to use every core, while the harness is otherwise pinned (for throughput, where the
 * scheduler spreading each process's helper threads, GC above all, is part of the answer). */
export const BOTH_CORES: Placement = { name: "unpinned, both cores" };

let tasksetPath: string | null | undefined;

/** Path of taskset, or null when it is not installed. */
export function taskset(): string | null {
  if (tasksetPath === undefined) tasksetPath = Bun.which("taskset");
  return tasksetPath;
}

/**
 * The placements this machine can measure: both when taskset exists and there are two cores,
 * otherwise one unpinned placement, with a note saying why.
 */
export function availablePlacements(): { placements: Placement[]; note?: string } {
  if (!taskset()) {
    return { placements: [UNPINNED], note: "taskset (util-linux) not found: processes are not pinned, round trips may be bimodal" };
  }
  if (availableParallelism() < 2) return { placements: [SAME_CORE], note: "one cpu available: only the same-core placement is measured" };
  return { placements: [SAME_CORE, CROSS_CORE] };
}

/**
 * The placements a scenario measures: `all` (default availablePlacements()'s), or with --quick
 * cross core alone where it is among them (a quick run is a smoke run; start-ups and warm-ups
 * per placement were most of its time).
 *
 * @example
 * const placements = measuredPlacements(options.quick); // [CROSS_CORE] when quick on 2 cores
 */
export function measuredPlacements(quick: boolean, all: Placement[] = availablePlacements().placements): Placement[] {
  return quick && all.includes(CROSS_CORE) ? [CROSS_CORE] : all;
}

/** The command prefix that runs a child on its placement's cpu (empty when unpinned). */
export function pinPrefix(placement: Placement): string[] {
  const path = taskset();
  if (!path) return [];
  // A child inherits the harness's own pinning, so "both cores" must widen it explicitly.
  if (placement === BOTH_CORES) return [path, "-c", `0-${availableParallelism() - 1}`];
  return placement.childCpu !== undefined ? [path, "-c", String(placement.childCpu)] : [];
}

/**
 * Pins every thread of this process to `cpu` and returns a function restoring the previous
 * mask. Does nothing (and restores nothing) without taskset.
 */
export function pinSelf(cpu: number | string): () => void {
  const path = taskset();
  if (!path) return () => {};
  const before = Bun.spawnSync([path, "-p", String(process.pid)]).stdout.toString();
  const mask = /affinity mask:\s*([0-9a-f]+)/i.exec(before)?.[1];
  const pinned = Bun.spawnSync([path, "-a", "-p", "-c", String(cpu), String(process.pid)]);
  if (pinned.exitCode !== 0) return () => {};
  return () => {
    if (mask) Bun.spawnSync([path, "-a", "-p", mask, String(process.pid)]);
  };
}

/**
 * Pins every thread of a running process (one started by someone else, e.g. the supervisor)
 * to the placement's child cpu. Returns false when it could not (no taskset, or unpinned).
 */
export function pinProcess(pid: number, placement: Placement): boolean {
  return placement.childCpu !== undefined && pinPid(pid, placement.childCpu);
}

/**
 * Pins every thread of a running process to a cpu or cpu list ("1", "0-1"); false without
 * taskset or when it failed. For scenarios that move their processes between placements.
 */
export function pinPid(pid: number, cpus: number | string): boolean {
  const path = taskset();
  if (!path) return false;
  // `taskset -a` fails when one of the threads it listed ends before it is moved (Bun's helper
  // threads come and go): a full run's fan-out stopped on it once. A second try finds the rest.
  for (let attempt = 0; attempt < 3; attempt++) {
    if (Bun.spawnSync([path, "-a", "-p", "-c", String(cpus), String(pid)], { stdout: "ignore", stderr: "ignore" }).exitCode === 0) return true;
  }
  return false;
}

/** The cpu list a process is allowed to run on ("0", "0-1"), from /proc; undefined off Linux. */
export function allowedCpus(pid: number): string | undefined {
  try {
    return /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  } catch {
    return undefined;
  }
}
