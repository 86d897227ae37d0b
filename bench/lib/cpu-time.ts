/**
 * CPU time of processes, to the nanosecond: the first field of /proc/<pid>/schedstat is the
 * time the process has run on a CPU (all its threads, kernel time included). Used for the CPU
 * time per round trip at each end, the JavaScript cost a latency figure hides.
 */
import { readFileSync } from "node:fs";

/** Nanoseconds process `pid` ("self" for this one) has spent on a CPU; 0 when it cannot be read (gone, or no /proc). */
export function cpuNanoseconds(pid: number | "self"): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ", 1)[0]);
  } catch {
    return 0;
  }
}

/** Total CPU nanoseconds of several processes. */
export function cpuNanosecondsOf(pids: readonly number[]): number {
  let total = 0;
  for (const pid of pids) total += cpuNanoseconds(pid);
  return total;
}
