/**
 * Bursts of events after pauses: a connectMesh client in this process (cpu 0) sends bursts of
 * `count` events (128 B, `await client.send` in a loop, every one acknowledged) to the sink
 * actor (bench/actors/sink.ts, cpu 1), waiting `plan[i]` ms before burst i, and asks the sink
 * for its count after each burst. Reported per burst: events per second and the sink's RssAnon;
 * at the end the sink's RssAnon after 12 s idle. A producer that sends in bursts pays, after
 * each pause, for the memory its members' allocator gave back while they waited (the purge
 * that MIMALLOC_PURGE_HOLES_MIN_INTERVAL paces): compare runs with that variable set to other
 * values in this process's environment, which the supervisor passes on to the sink.
 *
 * Run: `bun bench/burst.ts [count] [plan]` (default 10000 and
 * "0,0,0,0,0,0,1000,0,5000,0,5000,0,5000,0,5000,0"), e.g.
 * `MIMALLOC_PURGE_HOLES_MIN_INTERVAL=10000 bun bench/burst.ts`.
 */
import { startBenchMesh } from "./lib/mesh.ts";
import { PAYLOAD_128 } from "./lib/payload.ts";
import { allowedCpus, pinPid, pinSelf } from "./lib/placement.ts";
import { processMemory } from "./lib/proc-memory.ts";

const count = Number(process.argv[2] ?? 10_000);
const plan = (process.argv[3] ?? "0,0,0,0,0,0,1000,0,5000,0,5000,0,5000,0,5000,0").split(",").map(Number);

pinSelf(0);
await using mesh = await startBenchMesh(`mesh: { name: burst-${process.pid}, events: false }
supervisor:
  children:
    - { actor: sink, module: "{BENCH_ACTORS}/sink.ts" }
`);
const sink = mesh.pid("sink");
if (!pinPid(sink, 1) || allowedCpus(sink) !== "1") throw new Error(`could not move the sink (pid ${sink}) to cpu 1`);
const client = await mesh.client();
const handled = async () => (await client.request("sink", { op: "count" }, { timeoutMs: 60_000 })).payload as { count: number };

console.log(`MIMALLOC_PURGE_HOLES_MIN_INTERVAL=${process.env.MIMALLOC_PURGE_HOLES_MIN_INTERVAL ?? "(the members' default)"}`);
let expected = 0;
for (const pause of plan) {
  if (pause > 0) await Bun.sleep(pause);
  const started = performance.now();
  for (let i = 0; i < count; i++) await client.send("sink", PAYLOAD_128);
  const seen = (await handled()).count;
  const ms = performance.now() - started;
  expected += count;
  // The sink counts what it handled: a burst that lost an event would show here.
  if (seen < expected) throw new Error(`the sink handled ${seen} events, ${expected} were sent`);
  console.log(`after a ${pause} ms pause: ${count} events in ${ms.toFixed(1)} ms = ${(count / ms).toFixed(1)} k/s; sink anon ${processMemory(sink).anon.toFixed(1)} MB`);
}
await Bun.sleep(12_000);
console.log(`after 12 s idle: sink anon ${processMemory(sink).anon.toFixed(1)} MB`);
