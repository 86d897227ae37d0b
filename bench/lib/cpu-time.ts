/**
 * CPU time of processes, to the nanosecond: the first field of /proc/<pid>/task/<tid>/schedstat
 * is the time a thread has run on a CPU (kernel time included), summed over every thread of the
 * process. Every thread counts: Bun's collector marks on helper threads, so the main thread
 * alone (/proc/<pid>/schedstat) leaves out much of the cost of allocating. Threads that have
 * exited drop out of the sum (Bun's helpers live as long as the process); this process's own
 * total comes from getrusage instead.
 * Used for the CPU time per round trip at each end, the JavaScript cost a latency figure hides.
 */
import { readdirSync, readFileSync } from "node:fs";
import { processes } from "./interference.ts";

/** Nanoseconds each thread of `pid` ("self" for this process) has run, summed by thread name; empty when it cannot be read. */
export function cpuByThread(pid: number | "self"): Record<string, number> {
  const byName: Record<string, number> = {};
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tasks) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      byName[name] = (byName[name] ?? 0) + Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ", 1)[0]);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName;
}

/**
 * Nanoseconds process `pid` ("self" for this one) has spent on a CPU, all threads; 0 when it
 * cannot be read (gone, or no /proc). For this process, getrusage's count (process.cpuUsage),
 * which keeps the time of threads that have ended: this one starts and ends threads (its fetch
 * and file work), and their sum over /proc went backwards (the gateway scenario's supervisor
 * read -28.5 us per request).
 */
export function cpuNanoseconds(pid: number | "self"): number {
  if (pid === "self" || pid === process.pid) {
    const { user, system } = process.cpuUsage();
    return (user + system) * 1000;
  }
  let total = 0;
  for (const ns of Object.values(cpuByThread(pid))) total += ns;
  return total;
}

/** Total CPU nanoseconds of several processes. */
export function cpuNanosecondsOf(pids: readonly number[]): number {
  let total = 0;
  for (const pid of pids) total += cpuNanoseconds(pid);
  return total;
}

/** Pids of the processes whose parent is `parent` (default: this process), from /proc; empty without /proc. */
export function childPids(parent: number = process.pid): number[] {
  return processes().flatMap(([pid, ppid]) => (ppid === parent ? [pid] : []));
}

/**
 * A check that this process's children, all but the one `except()` names, are at rest: together
 * they ran less than `cpuMs` of CPU over the last `windowMs` (a child that appeared meanwhile
 * counts as busy). It samples /proc at most once per window, so it may be asked in a loop; it
 * answers from the latest whole window. Without /proc it always says quiet.
 *
 * @example
 * const quiet = childrenQuiet({ except: () => victimPid });
 * while (!quiet()) await oneMoreRequest();
 */
export function childrenQuiet(options: { except?: () => number | undefined; cpuMs?: number; windowMs?: number } = {}): () => boolean {
  const cpuMs = options.cpuMs ?? 2;
  const windowMs = options.windowMs ?? 25;
  let last: { at: number; cpu: Map<number, number> } | undefined;
  let quiet = false;
  const sample = () => new Map(childPids().filter((pid) => pid !== options.except?.()).map((pid) => [pid, cpuNanoseconds(pid)]));
  return () => {
    const now = performance.now();
    if (last && now - last.at < windowMs) return quiet;
    const cpu = sample();
    if (cpu.size === 0 && !last) return true;
    if (last) {
      let busyNs = 0;
      for (const [pid, ns] of cpu) busyNs += ns - (last.cpu.get(pid) ?? 0);
      quiet = busyNs < cpuMs * 1e6;
    }
    last = { at: now, cpu };
    return quiet;
  };
}

/**
 * Minor page faults of process `pid` ("self" for this one), all threads: field 10 of
 * /proc/<pid>/stat; NaN when it cannot be read. Each is a trap into the kernel, and on some
 * virtual machines a costly one (about 11 us per 4 KiB page on the 2-core boxes measured in
 * docs/benchmarks.md, "When members compile their code, and what a page fault costs"), so
 * memory handed back and touched again shows here.
 */
export function minorFaults(pid: number | "self"): number {
  try {
    // The command name, in parentheses, may hold spaces: count fields after its closing one.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[7]);
  } catch {
    return Number.NaN;
  }
}

/**
 * Voluntary context switches of every thread of `pid` (`/proc/<pid>/task/<tid>/status`): how often
 * its threads went to sleep, so how often they were woken.
 *
 * @example
 * const before = wakeUps(pid);
 * // ... the actor idles or starts ...
 * console.log(`${wakeUps(pid) - before} wake-ups`);
 */
export function wakeUps(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    total += Number(/\nvoluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8"))?.[1] ?? 0);
  }
  return total;
}
