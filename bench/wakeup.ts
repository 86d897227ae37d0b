/**
 * What one message costs a member that was idle: a mesh of `members` echo actors
 * (actors/echo.ts) whose supervisor changes one registry entry `updates` times in each of two
 * rounds: `gap` ms apart, then one per event-loop turn. Every change is a registry update to
 * every member, a small event that wakes each of them (the changes of one synchronous run go
 * out as one event, so each change waits for the pause or the next turn). Reported: the CPU
 * each member spends per update (all threads, less what it spends idle over as long: measured
 * first, bench/idle.ts has more), one member's by thread name and the supervisor's (both
 * uncorrected), and as the baseline a bare `Bun.listen` echo server in its own process, with
 * the members' runtime settings (MEMBER_RUNTIME_DEFAULTS), sent one 200-byte message per `gap` ms.
 *
 * Run: `bun bench/wakeup.ts [members] [updates] [gap ms]` (default 20, 200, 20).
 */
import { join } from "node:path";
import { runtimeDefaults } from "../src/supervisor/member-process.ts";
import { cpuByThread, cpuNanoseconds } from "./lib/cpu-time.ts";
import { ACTORS_DIR, startBenchMesh } from "./lib/mesh.ts";
import { tempDir } from "./lib/scenario.ts";

const [members = 20, updates = 200, gap = 20] = process.argv.slice(2).map(Number);

/** CPU time of `pid` (every thread) so far, in microseconds. */
const cpuOf = (pid: number | "self") => cpuNanoseconds(pid) / 1000;

/** A bare echo server on a Unix socket in its own process: CPU per message `gap` ms apart. */
async function bareServer(): Promise<number> {
  using dir = tempDir();
  const path = join(dir.path, "echo.sock");
  const code = `Bun.listen({ unix: ${JSON.stringify(path)}, socket: { data(s, d) { s.write(d); } } }); console.log("up");`;
  const server = Bun.spawn([process.execPath, "-e", code], { stdout: "pipe", stderr: "inherit", env: { ...process.env, ...runtimeDefaults() } });
  try {
    await server.stdout.getReader().read(); // its "up"
    let echoed = 0;
    const socket = await Bun.connect({ unix: path, socket: { data: () => void echoed++ } });
    const before = cpuOf(server.pid);
    for (let i = 0; i < updates; i++) {
      socket.write(new Uint8Array(200));
      await Bun.sleep(gap);
    }
    const used = cpuOf(server.pid) - before;
    socket.end();
    if (echoed === 0) throw new Error("the bare server echoed nothing");
    return used / updates;
  } finally {
    server.kill();
  }
}

await using bench = await startBenchMesh(`mesh: { name: wakeup-${Math.random().toString(36).slice(2, 6)}, events: false }
supervisor:
  children:
    - { actor: echo, module: "${ACTORS_DIR}/echo.ts", pool: ${members} }
`);
const pids = Array.from({ length: members }, (_, i) => bench.pid(`echo#${i}`));
await Bun.sleep(1500); // past the start-up's own updates

// What each member spends idle, in us per ms: taken off the rounds' figures.
const idleBefore = pids.map(cpuOf);
const idleStart = performance.now();
await Bun.sleep(Math.max(2000, updates * gap));
const idleRate = pids.map((pid, i) => (cpuOf(pid) - idleBefore[i]!) / (performance.now() - idleStart));

/** Per update: the median member's CPU, one member's by thread, and the supervisor's (us); `spaced`: `gap` ms apart, else one per event-loop turn. */
async function round(spaced: boolean): Promise<string> {
  const before = pids.map(cpuOf);
  const threadsBefore = cpuByThread(pids[0]!);
  const selfBefore = cpuOf("self");
  const start = performance.now();
  for (let i = 0; i < updates; i++) {
    bench.mesh.registry.patch("echo#0", { queueDepth: i % 7 });
    // Each change its own event (changes of one synchronous run go out together): paused, or one per turn.
    await (spaced ? Bun.sleep(gap) : new Promise((resolve) => setImmediate(resolve)));
  }
  await Bun.sleep(500); // the last update handled
  const window = performance.now() - start;
  const self = (cpuOf("self") - selfBefore) / updates;
  const each = pids.map((pid, i) => (cpuOf(pid) - before[i]! - idleRate[i]! * window) / updates).sort((a, b) => a - b);
  const threads = Object.entries(cpuByThread(pids[0]!))
    .map(([name, ns]) => [name, (ns - (threadsBefore[name] ?? 0)) / 1000 / updates] as const)
    .filter(([, us]) => us >= 1)
    .map(([name, us]) => `${name} ${us.toFixed(0)}`);
  return `${spaced ? `${gap} ms apart` : "one per turn, no pause"}: member ${each[each.length >> 1]!.toFixed(0)} us per update (median, idle taken off; echo#0 by thread, not: ${threads.join(", ")}), supervisor ${self.toFixed(0)} us per update to all ${members}`;
}

console.log(`${members} members, ${updates} registry updates`);
console.log(await round(true));
console.log(await round(false));
console.log(`baseline, a bare Bun.listen echo server: ${(await bareServer()).toFixed(0)} us CPU per 200-byte message ${gap} ms apart`);
