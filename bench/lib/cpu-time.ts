/**
 * CPU time of processes, to the nanosecond: the first field of /proc/<pid>/task/<tid>/schedstat
 * is the time a thread has run on a CPU (kernel time included), summed over every thread of the
 * process. Every thread counts: Bun's collector marks on helper threads, so the main thread
 * alone (/proc/<pid>/schedstat) leaves out much of the cost of allocating. Threads that have
 * exited drop out of the sum; Bun's helpers live as long as the process.
 * Used for the CPU time per round trip at each end, the JavaScript cost a latency figure hides.
 */
import { readdirSync, readFileSync } from "node:fs";

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

/** Nanoseconds process `pid` ("self" for this one) has spent on a CPU, all threads; 0 when it cannot be read (gone, or no /proc). */
export function cpuNanoseconds(pid: number | "self"): number {
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
