/**
 * Where a tree's start goes: a mesh of `actors` echo actors (footprint.bench.ts's pool) started
 * until every instance is ready, then the CPU each actor has spent so far (every thread, user +
 * kernel) by its place in the start, the supervisor's (this process), and the voluntary context
 * switches of the first and the last actor (their wake-ups). An actor started early is woken by
 * what the mesh hears of every later start; one started last has spent only its own boot.
 * Then one start's steps (the `startup` of its started event; "loaded" is when a spare read
 * its assignment) and the gap between a start's ready and the next call. HERMES_ACTOR_STANDBY=0
 * starts every child fresh, without the next host loading beside it (docs/actors.md).
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
/** Each start's StartupTimings (ms after the supervisor called it), with when it was called. */
const starts: { calledAt: number; steps: Record<string, number> }[] = [];
await using mesh = await startBenchMesh(footprintMeshYaml(`tree-start-${Math.random().toString(36).slice(2, 6)}`, actors), {
  startUpdateHoldMs: hold,
  onMark: (mark) => {
    if (mark.kind === "event" && mark.event.type === "started" && mark.event.startup) {
      const steps = mark.event.startup;
      starts.push({ calledAt: mark.at - (steps.ready ?? 0) - t0, steps });
    }
  },
});
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
const stepNames = [...new Set(starts.flatMap((s) => Object.keys(s.steps)))].filter((k) => k !== "standby");
const medianOf = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
console.log(`  one start, median ms after it was called: ${stepNames.map((k) => `${k} ${medianOf(starts.map((s) => s.steps[k]!).filter(Number.isFinite)).toFixed(1)}`).join(", ")}`);
const gaps = starts.slice(1).map((s, i) => s.calledAt - (starts[i]!.calledAt + (starts[i]!.steps.ready ?? 0)));
console.log(`  between one start's ready and the next start's call, median ${medianOf(gaps).toFixed(1)} ms`);
