/**
 * What a mesh at rest costs: a mesh of one echo actor (actors/echo.ts), left alone 3 s, then
 * for 10 s the CPU (all threads, by thread name), voluntary context switches (wake-ups) and
 * memory (VmRSS, RssAnon) of each process: the actor, the standby host, and this process (the
 * supervisor). On an edge box every idle actor pays this all the time.
 *
 * Run: `bun bench/idle.ts [seconds]` (default 10).
 */
import { readFileSync } from "node:fs";
import { childPids, cpuByThread, wakeUps } from "./lib/cpu-time.ts";
import { ACTORS_DIR, startBenchMesh } from "./lib/mesh.ts";

const SECONDS = Number(process.argv[2] ?? 10);

const mb = (status: string, field: string) => (Number(status.match(new RegExp(`${field}:\\s+(\\d+)`))?.[1] ?? 0) / 1024).toFixed(1);

await using mesh = await startBenchMesh(`mesh: { name: idle-cost }\nsupervisor:\n  children:\n    - { actor: echo, module: "${ACTORS_DIR}/echo.ts" }\n`);
await Bun.sleep(3000);
const pids = childPids();
const before = new Map(pids.map((pid) => [pid, { cpu: cpuByThread(pid), wakeups: wakeUps(pid) }]));
const selfBefore = cpuByThread("self");
await Bun.sleep(SECONDS * 1000);
const report = (label: string, cpuBefore: Record<string, number>, cpuAfter: Record<string, number>, extra: string) => {
  const threads = Object.entries(cpuAfter).map(([name, ns]) => [name, (ns - (cpuBefore[name] ?? 0)) / 1e6 / SECONDS] as const);
  const total = threads.reduce((sum, [, ms]) => sum + ms, 0);
  const shown = threads.filter(([, ms]) => ms >= 0.05).map(([name, ms]) => `${name} ${ms.toFixed(2)}`).join(", ");
  console.log(`${label}: ${total.toFixed(2)} ms CPU per s (${shown})${extra}`);
};
for (const pid of pids) {
  const then = before.get(pid)!;
  const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  const label = argv.includes("--standby") ? "standby host" : `actor ${argv[argv.indexOf("--name") + 1] ?? pid}`;
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  report(label, then.cpu, cpuByThread(pid), `, ${((wakeUps(pid) - then.wakeups) / SECONDS).toFixed(1)} wake-ups per s, RSS ${mb(status, "VmRSS")} MB, RssAnon ${mb(status, "RssAnon")} MB`);
}
report("supervisor (this process)", selfBefore, cpuByThread("self"), "");
