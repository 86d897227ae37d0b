/**
 * The actor path in its steady state, one mesh alone on the machine: a connectMesh client in
 * this process and one actor process, warmed up long enough for the JIT to finish (the quick
 * scenarios measure a few thousand messages and count the compiler's work in), then measured
 * over many messages. Reported per message: wall time, and the CPU time of every thread of
 * both processes by thread name (`bun`: the JavaScript thread; `HeapHelper`, `JSCWarmUp`: the
 * collector's helpers; `JITWorker`: the compiler; `mi-scavenger`: the allocator), which is
 * what a message costs once the program runs; and each process's minor page faults per message
 * (memory handed back and touched again: about 11 us each on the 2-core boxes measured).
 *
 * - `request`: sequential `client.request("echo", 128 B)`, the echo actor (actors/echo.ts).
 * - `events`: `await client.send("sink", 128 B)` in a loop, every event handled and
 *   acknowledged, the sink (bench/actors/sink.ts) asked for its count at the end.
 * - `pipelined`: 1,000 requests in flight at all times to the sink.
 * - `actor-request`, `actor-events`, `actor-pipelined`: the same from one actor to another, the
 *   pinger actor (bench/actors/pinger.ts) sending to the echo or the sink, asked by this process
 *   once per run; both actors' CPU is reported.
 *
 * Run: `bun bench/steady.ts [mode] [messages] [same|cross]` (default request, 40,000 after a
 * warm-up of 60,000, same core: every process on cpu 0; cross puts the receiving actor, all its
 * threads, on cpu 1). With `events: true` in the mesh file (trace lines on) set STEADY_EVENTS=1.
 */
import type { MeshClient } from "../src/actor/connect-mesh.ts";
import { cpuByThread, minorFaults } from "./lib/cpu-time.ts";
import { startBenchMesh } from "./lib/mesh.ts";
import { PAYLOAD_128 } from "./lib/payload.ts";
import { pinSelf } from "./lib/placement.ts";

const [mode = "request", countText = "40000", placement = "same"] = process.argv.slice(2);
const count = Number(countText);
const WARMUP = 60_000;
const IN_FLIGHT = 1000;

/** "8.1 us (bun 7.4, JITWorker 0.3, ...)" per message from two cpuByThread readings, threads under 0.1 us left out. */
function perMessage(before: Record<string, number>, after: Record<string, number>, n: number): string {
  let total = 0;
  const parts: string[] = [];
  for (const [name, ns] of Object.entries(after)) {
    const each = (ns - (before[name] ?? 0)) / 1000 / n;
    total += each;
    if (each >= 0.1) parts.push(`${name} ${each.toFixed(2)}`);
  }
  return `${total.toFixed(2)} us (${parts.join(", ")})`;
}

/** A mode: the actors its mesh runs (the last one receives), and one run of n messages. */
interface Driver {
  actors: ReadonlyArray<{ name: string; module: string }>;
  run(client: MeshClient, n: number): Promise<void>;
}

const ECHO = { name: "echo", module: "{ACTORS}/echo.ts" };
const SINK = { name: "sink", module: "{BENCH_ACTORS}/sink.ts" };
const PINGER = { name: "pinger", module: "{BENCH_ACTORS}/pinger.ts" };
const LONG = { timeoutMs: 300_000 };

async function countedBy(client: MeshClient, sink: string): Promise<number> {
  return (await client.request(sink, { op: "count" }, LONG)).payload.count as number;
}

const drivers: Record<string, Driver> = {
  request: {
    actors: [ECHO],
    async run(client, n) {
      for (let i = 0; i < n; i++) await client.request("echo", PAYLOAD_128, { timeoutMs: 10_000 });
    },
  },
  events: {
    actors: [SINK],
    async run(client, n) {
      const before = await countedBy(client, "sink");
      for (let i = 0; i < n; i++) await client.send("sink", PAYLOAD_128);
      const seen = (await countedBy(client, "sink")) - before;
      if (seen !== n) throw new Error(`the sink counted ${seen} events of ${n}`);
    },
  },
  pipelined: {
    actors: [SINK],
    async run(client, n) {
      let started = 0;
      const lane = async () => {
        while (started < n) {
          started++;
          await client.request("sink", PAYLOAD_128, { timeoutMs: 60_000 });
        }
      };
      await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, n) }, lane));
    },
  },
  "actor-request": {
    actors: [PINGER, ECHO],
    async run(client, n) {
      const { samples } = (await client.request("pinger", { n, target: "echo" }, LONG)).payload as { samples: number[] };
      if (samples.length !== n) throw new Error(`the pinger made ${samples.length} round trips of ${n}`);
    },
  },
  "actor-events": {
    actors: [PINGER, SINK],
    async run(client, n) {
      const before = await countedBy(client, "sink");
      const { count } = (await client.request("pinger", { op: "events", n, target: "sink" }, LONG)).payload as { count: number };
      if (count - before !== n) throw new Error(`the sink counted ${count - before} events of ${n}`);
    },
  },
  "actor-pipelined": {
    actors: [PINGER, SINK],
    async run(client, n) {
      const { answered } = (await client.request("pinger", { op: "pipelined", n, outstanding: IN_FLIGHT, target: "sink" }, LONG)).payload as { answered: number };
      if (answered !== n) throw new Error(`the pinger had ${answered} answers of ${n}`);
    },
  },
};

const driver = drivers[mode];
if (!driver) throw new Error(`unknown mode ${mode}: ${Object.keys(drivers).join(", ")}`);
if (placement !== "same" && placement !== "cross") throw new Error(`unknown placement ${placement}: same or cross`);
const restore = pinSelf(0);
try {
  await using mesh = await startBenchMesh(`mesh: { name: steady-${Math.random().toString(36).slice(2, 6)}, events: ${process.env.STEADY_EVENTS === "1"} }
supervisor:
  children:
${driver.actors.map((a) => `    - { actor: ${a.name}, module: "${a.module}" }`).join("\n")}
`);
  const pids = driver.actors.map((a) => mesh.pid(a.name));
  // -a: every thread of the receiver (its collector's and compiler's too), not only its main one.
  if (placement === "cross") Bun.spawnSync(["taskset", "-a", "-pc", "1", String(pids.at(-1))], { stdout: "ignore" });
  const client = await mesh.client();
  await driver.run(client, WARMUP);
  const before = pids.map(cpuByThread);
  const here0 = cpuByThread("self");
  const faults0 = [...pids, "self" as const].map(minorFaults);
  const t0 = Bun.nanoseconds();
  await driver.run(client, count);
  const wallUs = (Bun.nanoseconds() - t0) / 1000 / count;
  const after = pids.map(cpuByThread);
  const here1 = cpuByThread("self");
  const faults = [...pids, "self" as const].map((pid, i) => ((minorFaults(pid) - faults0[i]!) / count).toFixed(3));
  console.log(`steady ${mode} (${placement} core), ${count} messages after ${WARMUP}: ${wallUs.toFixed(2)} us each (${(1000 / wallUs).toFixed(1)} k/s)`);
  driver.actors.forEach((a, i) => console.log(`  CPU per message, ${a.name} actor: ${perMessage(before[i]!, after[i]!, count)}`));
  console.log(`  CPU per message, this process (the client and the supervisor): ${perMessage(here0, here1, count)}`);
  console.log(`  page faults per message: ${driver.actors.map((a, i) => `${a.name} ${faults[i]}`).join(", ")}, this process ${faults.at(-1)}`);
} finally {
  restore();
}
