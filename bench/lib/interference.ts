/**
 * How much CPU other processes took while a scenario ran: the machine's busy time from
 * /proc/stat minus the time of this process and its children. On a 2-core machine a compiler
 * or a test run next to the benchmark shifts every figure, so each scenario reports this.
 * Linux only; elsewhere it reports nothing.
 */
import { readdirSync, readFileSync } from "node:fs";

export const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** Busy ticks of all cpus (user, nice, system, irq, softirq, steal). */
export function machineBusyTicks(): number {
  const fields = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return user + nice + system + irq + softirq + steal;
}

/** [pid, ppid, utime + stime, cutime + cstime] of every process (empty without /proc). */
export function processes(): Array<[number, number, number, number]> {
  const out: Array<[number, number, number, number]> = [];
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // After "pid (comm) ": state=0 ppid=1 ... utime=11 stime=12 cutime=13 cstime=14
      out.push([Number(name), Number(f[1]), Number(f[11]) + Number(f[12]), Number(f[13]) + Number(f[14])]);
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

/** CPU ticks used by this process, its live descendants and its reaped children. */
function ourTicks(): number {
  const all = processes();
  const ours = new Set([process.pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of all) if (!ours.has(pid) && ours.has(ppid)) (ours.add(pid), (grew = true));
  }
  let ticks = 0;
  for (const [pid, , own, reaped] of all) if (ours.has(pid)) ticks += own + (pid === process.pid ? reaped : 0);
  return ticks;
}

export interface Interference {
  /** CPU seconds used by other processes during the interval. */
  otherCpuSeconds: number;
  /** That as a share of the interval's wall time on one cpu (1.0 = one whole core). */
  otherCores: number;
}

/** Starts watching; the returned function ends the interval and reports. Undefined off Linux. */
export function watchInterference(): (() => Interference) | undefined {
  let busy0: number;
  let ours0: number;
  try {
    busy0 = machineBusyTicks();
    ours0 = ourTicks();
  } catch {
    return undefined;
  }
  const t0 = performance.now();
  return () => {
    const other = Math.max(0, machineBusyTicks() - busy0 - (ourTicks() - ours0)) / TICKS_PER_SECOND;
    return { otherCpuSeconds: other, otherCores: other / ((performance.now() - t0) / 1000) };
  };
}
