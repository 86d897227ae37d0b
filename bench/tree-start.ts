/**
 * Where a tree's start goes: a mesh of `actors` echo actors (footprint.bench.ts's pool) started
 * until every instance is ready, then the CPU each actor has spent so far (every thread, user +
 * kernel) by its place in the start, the supervisor's (this process), and the voluntary context
 * switches of the first and the last actor (their wake-ups). An actor started early is woken by
 * what the mesh hears of every later start; one started last has spent only its own boot.
 * `hold` is startMesh's `startUpdateHoldMs` (docs/actors.md, "What the mesh hears of a start"):
 * 0 announces every start at once, as before it existed.
 *
 * Run: `bun bench/tree-start.ts [actors] [hold ms]` (default 50, 500). Interleave runs of two
 * settings: on these machines the speed moves from minute to minute.
 */
import { footprintMeshYaml } from "./footprint.bench.ts";
import { cpuNanoseconds, wakeUps } from "./lib/cpu-time.ts";
import { startBenchMesh } from "./lib/mesh.ts";

const [actors = 50, hold = 500] = process.argv.slice(2).map(Number);

const cpuMs = (pid: number | "self") => cpuNanoseconds(pid) / 1e6;

const t0 = performance.now();
await using mesh = await startBenchMesh(footprintMeshYaml(`tree-start-${Math.random().toString(36).slice(2, 6)}`, actors), { startUpdateHoldMs: hold });
const upMs = performance.now() - t0;
const pids = Array.from({ length: actors }, (_, i) => mesh.pid(actors === 1 ? "echo" : `echo#${i}`));
const cpus = pids.map(cpuMs);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const fifth = Math.max(1, Math.floor(actors / 5));
const mean = (xs: number[]) => (sum(xs) / xs.length).toFixed(0);
console.log(`tree start, ${actors} actors, startUpdateHoldMs ${hold}: up in ${upMs.toFixed(0)} ms`);
console.log(`  CPU of the actors: ${sum(cpus).toFixed(0)} ms in all; per actor, mean of the first fifth ${mean(cpus.slice(0, fifth))} ms, of the last ${mean(cpus.slice(-fifth))} ms`);
console.log(`  CPU of the supervisor (this process): ${cpuMs("self").toFixed(0)} ms`);
console.log(`  wake-ups (voluntary context switches, all threads): first actor ${wakeUps(pids[0]!)}, last ${wakeUps(pids.at(-1)!)}`);
