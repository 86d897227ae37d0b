/**
 * What one message costs a member that was idle: a mesh of `members` echo actors
 * (actors/echo.ts) whose supervisor changes one registry entry `updates` times, `gap` ms apart
 * and then one per event-loop turn. Every change is a registry update to every member, a small event that
 * wakes each of them (the changes of one event-loop turn go out as one event, so each change
 * waits for the next turn or the pause). Reported: the CPU each member spends per update (all threads, and by
 * thread name for one of them), the supervisor's per update, and as the baseline a bare
 * `Bun.listen` echo server in its own process sent one 200-byte message per `gap` ms. The idle
 * CPU of the same length of time without updates is taken off (bench/idle.ts measures it).
 *
 * Run: `bun bench/wakeup.ts [members] [updates] [gap ms]` (default 20, 200, 20).
 */
import { unlinkSync } from "node:fs";
import { join } from "node:path";
import { cpuByThread } from "./lib/cpu-time.ts";
import { ACTORS_DIR, startBenchMesh } from "./lib/mesh.ts";
import { tempDir } from "./lib/scenario.ts";

const [members = 20, updates = 200, gap = 20] = process.argv.slice(2).map(Number);

/** CPU time of every thread of `pid` so far, in microseconds. */
const cpuOf = (pid: number) => Object.values(cpuByThread(pid)).reduce((sum, ns) => sum + ns, 0) / 1000;

/** A bare echo server on a Unix socket in its own process: CPU per message `gap` ms apart. */
async function bareServer(): Promise<number> {
  using dir = tempDir();
  const path = join(dir.path, "echo.sock");
  const code = `Bun.listen({ unix: ${JSON.stringify(path)}, socket: { data(s, d) { s.write(d); } } }); console.log("up");`;
  const server = Bun.spawn([process.execPath, "-e", code], { stdout: "pipe", stderr: "inherit" });
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
    try {
      unlinkSync(path);
    } catch {
      // gone with its directory
    }
  }
}

await using bench = await startBenchMesh(`mesh: { name: wakeup-${Math.random().toString(36).slice(2, 6)}, events: false }
supervisor:
  children:
    - { actor: echo, module: "${ACTORS_DIR}/echo.ts", pool: ${members} }
`);
const pids = Array.from({ length: members }, (_, i) => bench.pid(`echo#${i}`));
await Bun.sleep(1500); // past the start-up's own updates

/** Per update: the median member's CPU, one member's by thread, and the supervisor's (us); `spaced`: `gap` ms apart, else one per event-loop turn. */
async function round(spaced: boolean): Promise<string> {
  const quiet = spaced ? updates * gap : 0;
  // The same length of time without updates, for what an idle member spends anyway.
  const idleBefore = pids.map(cpuOf);
  await Bun.sleep(quiet);
  const idle = pids.map((pid, i) => cpuOf(pid) - idleBefore[i]!);
  const before = pids.map(cpuOf);
  const threadsBefore = cpuByThread(pids[0]!);
  const selfBefore = cpuOf(process.pid);
  for (let i = 0; i < updates; i++) {
    bench.mesh.registry.patch("echo#0", { queueDepth: i % 7 });
    // Each change its own event (changes of one tick go out together): paused, or one per turn.
    await (spaced ? Bun.sleep(gap) : new Promise((resolve) => setImmediate(resolve)));
  }
  await Bun.sleep(500); // the last update handled
  const self = (cpuOf(process.pid) - selfBefore) / updates;
  const each = pids.map((pid, i) => (cpuOf(pid) - before[i]! - idle[i]!) / updates).sort((a, b) => a - b);
  const threads = Object.entries(cpuByThread(pids[0]!))
    .map(([name, ns]) => [name, (ns - (threadsBefore[name] ?? 0)) / 1000 / updates] as const)
    .filter(([, us]) => us >= 1)
    .map(([name, us]) => `${name} ${us.toFixed(0)}`);
  return `${spaced ? `${gap} ms apart` : "one per turn, no pause"}: member ${each[each.length >> 1]!.toFixed(0)} us per update (median; echo#0 by thread: ${threads.join(", ")}), supervisor ${self.toFixed(0)} us per update to all ${members}`;
}

console.log(`${members} members, ${updates} registry updates`);
console.log(await round(true));
console.log(await round(false));
console.log(`baseline, a bare Bun.listen echo server: ${(await bareServer()).toFixed(0)} us CPU per 200-byte message ${gap} ms apart`);
