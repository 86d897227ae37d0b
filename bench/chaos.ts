/**
 * Chaos run: the mesh's promise that a crash loses nothing, checked under load while actors are
 * killed with SIGKILL at random, for as long as asked. Longer than a test may take, so it lives
 * here; it measures nothing against a baseline and exits 1 when a promise was broken.
 *
 * The mesh (every setting the default but the restart intensity, which the kills would exceed):
 * a durable `ledger` (bench/actors/chaos-ledger.ts) counting each key it is sent, a pool of
 * three `worker`s (chaos-worker.ts, not durable) and a durable `relay` (chaos-relay.ts) that,
 * for a request `{ n }`, sends the ledger `relay-<n>` and asks a worker for `n`. This process
 * keeps 8 requests to the relay in flight and streams events `ev-<i>` to the ledger, while a
 * killer picks a healthy instance at random every 250 to 750 ms and kills its process.
 *
 * Checked at the end, once the load has stopped and every answer is in:
 * - every request was answered, with its own `n` worked by a worker (none failed, none mixed up);
 * - the ledger counted every event exactly once, and every relay call exactly once: the
 *   client's and the relay's redeliveries and the durable stores' deduplication together;
 * - each kill was one restart, the supervisor's count of them as high as the kills;
 * - nothing went to a dead-letter list.
 * Reported too: the answers' latency while the kills went on (p50, p99, max), the longest
 * stretch without an answer, and the supervisor's backoff before each restart (an instance
 * killed again within the restart period waits up to a second: docs/actors.md, "Backoff").
 *
 * Run: `bun bench/chaos.ts [seconds] [kill every ms, low-high]` (default 60 and 250-750).
 */
import { cpSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MeshClient } from "../src/actor/connect-mesh.ts";
import { HermesError } from "../mesh/errors.ts";
import { startBenchMesh } from "./lib/mesh.ts";

const seconds = Number(process.argv[2] ?? 60);
const [killLow, killHigh] = (process.argv[3] ?? "250-750").split("-").map(Number) as [number, number];
const LANES = 8;
const SETTLE_MS = 120_000;
const MESH = `
mesh: { name: chaos }
supervisor:
  intensity: 1000
  children:
    - { actor: ledger, module: "{BENCH_ACTORS}/chaos-ledger.ts" }
    - { actor: worker, module: "{BENCH_ACTORS}/chaos-worker.ts", pool: 3 }
    - { actor: relay, module: "{BENCH_ACTORS}/chaos-relay.ts" }
`;
const VICTIMS = ["ledger", "relay", "worker#0", "worker#1", "worker#2"];

const problems: string[] = [];
const problem = (text: string) => {
  if (problems.length < 50) problems.push(text);
};

/** The supervisor's restart delays (its backoff for a child's repeated crashes), in ms. */
const backoffs: number[] = [];
await using bench = await startBenchMesh(MESH, {
  onMark: (mark) => {
    if (mark.kind === "event" && mark.event.type === "restarting") backoffs.push(mark.event.delayMs);
  },
});
const client = await bench.client();
const registry = bench.mesh.registry;
console.log(`chaos: ${seconds} s, a kill every ${killLow} to ${killHigh} ms among ${VICTIMS.join(", ")}; ${LANES} requests in flight, events streaming`);

let running = true;
const startedAt = performance.now();
const latencies: number[] = [];
const answeredAt: number[] = [];
const failures = new Map<string, number>();
let nextRequest = 0;
let events = 0;

/** One lane: request after request to the relay, each checked. */
async function requestLane(c: MeshClient): Promise<void> {
  while (running) {
    const n = nextRequest++;
    const t0 = performance.now();
    try {
      const answer = (await c.request("relay", { n }, { timeoutMs: SETTLE_MS })).payload;
      const at = performance.now();
      latencies.push(at - t0);
      answeredAt.push(at);
      if (answer.n !== n || answer.worked !== n) problem(`request ${n} was answered ${JSON.stringify(answer)}`);
    } catch (error) {
      const key = error instanceof HermesError ? `code ${error.code}: ${error.message}` : String(error);
      failures.set(key, (failures.get(key) ?? 0) + 1);
      problem(`request ${n} failed: ${key}`);
    }
  }
}

/** Events to the ledger, about a thousand a second, awaiting each send as a producer does. */
async function eventLane(c: MeshClient): Promise<void> {
  while (running) {
    await c.send("ledger", { key: `ev-${events++}` });
    if (events % 20 === 0) await Bun.sleep(20);
  }
}

const kills = new Map<string, number>();
/** Kills a random healthy victim every killLow..killHigh ms. */
async function killer(): Promise<void> {
  while (running) {
    await Bun.sleep(killLow + Math.random() * (killHigh - killLow));
    if (!running) return;
    const healthy = VICTIMS.filter((a) => registry.byAddress(a)?.health === "healthy" && registry.byAddress(a)?.pid);
    if (healthy.length === 0) continue;
    const victim = healthy[Math.floor(Math.random() * healthy.length)]!;
    try {
      process.kill(bench.pid(victim), "SIGKILL");
      kills.set(victim, (kills.get(victim) ?? 0) + 1);
    } catch {
      // It went meanwhile (a restart in progress): not counted.
    }
  }
}

const progress = setInterval(() => {
  const killed = [...kills.values()].reduce((a, b) => a + b, 0);
  const health = VICTIMS.map((a) => `${a} ${registry.byAddress(a)?.health}`).join(", ");
  console.log(`chaos: ${((performance.now() - startedAt) / 1000).toFixed(0)} s, ${latencies.length} answered, ${events} events sent, ${killed} kills (${health}; at ${new Date().toISOString()})`);
}, 10_000);
const lanes = [...Array.from({ length: LANES }, () => requestLane(client)), eventLane(client), killer()];
await Bun.sleep(seconds * 1000);
running = false;
clearInterval(progress);
const stoppedAt = performance.now();
const settled = await Promise.race([Promise.all(lanes).then(() => true), Bun.sleep(SETTLE_MS).then(() => false)]);
if (!settled) problem(`the load did not settle within ${SETTLE_MS} ms of the end: a request never came back`);
const totalKills = [...kills.values()].reduce((a, b) => a + b, 0);

// Every instance back, then the ledger's counts once every event has reached it.
const deadline = Date.now() + SETTLE_MS;
while (VICTIMS.some((a) => registry.byAddress(a)?.health !== "healthy") && Date.now() < deadline) await Bun.sleep(50);
let counts: Record<string, number> = {};
for (;;) {
  counts = (await client.request("ledger", { op: "counts" }, { timeoutMs: 30_000 })).payload.counts as Record<string, number>;
  // The relay's events go out after its answers: the last ones may still be on their way.
  if (Object.keys(counts).length >= events + nextRequest || Date.now() > deadline) break;
  await Bun.sleep(100);
}
for (let i = 0; i < events; i++) if (counts[`ev-${i}`] !== 1) problem(`event ev-${i} counted ${counts[`ev-${i}`] ?? 0} times`);
for (let n = 0; n < nextRequest; n++) if (counts[`relay-${n}`] !== 1) problem(`relay call ${n} counted ${counts[`relay-${n}`] ?? 0} times`);
const strays = Object.keys(counts).filter((k) => !/^(ev|relay)-\d+$/.test(k) || Number(k.split("-")[1]) >= (k.startsWith("ev") ? events : nextRequest));
if (strays.length > 0) problem(`the ledger counted keys nobody sent: ${strays.slice(0, 5).join(", ")}`);
const restarts = VICTIMS.reduce((sum, a) => sum + (registry.byAddress(a)?.restarts ?? 0), 0);
if (restarts < totalKills) problem(`${totalKills} kills but ${restarts} restarts counted`);
if (client.deadLetters().length > 0) problem(`${client.deadLetters().length} dead letters at the client`);

const sorted = latencies.filter((_, i) => answeredAt[i]! <= stoppedAt).sort((a, b) => a - b);
const pct = (p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);
let longestGap = 0;
// From the start to the end of the kills: a silence at either end counts too.
const times = [startedAt, ...answeredAt.filter((t) => t <= stoppedAt).sort((a, b) => a - b), stoppedAt];
for (let i = 1; i < times.length; i++) longestGap = Math.max(longestGap, times[i]! - times[i - 1]!);
const sortedBackoffs = backoffs.sort((a, b) => a - b);
console.log(`chaos: ${totalKills} kills (${[...kills].map(([a, k]) => `${a} ${k}`).join(", ")}), ${restarts} restarts counted by the supervisor; backoff before a restart p50 ${sortedBackoffs[sortedBackoffs.length >> 1] ?? 0} ms, max ${sortedBackoffs.at(-1) ?? 0} ms (a child's repeated crashes)`);
console.log(`chaos: ${nextRequest} requests, ${latencies.length} answered, ${[...failures.values()].reduce((a, b) => a + b, 0)} failed${failures.size ? ` (${[...failures].map(([k, v]) => `${v}x ${k}`).join("; ")})` : ""}; ${events} events`);
console.log(`chaos: answers during the kills p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms, max ${pct(100).toFixed(1)} ms; longest stretch without an answer ${longestGap.toFixed(1)} ms`);
if (problems.length > 0) {
  console.log(`chaos: FAILED\n  ${problems.join("\n  ")}`);
  const kept = join(tmpdir(), `hermes-chaos-logs-${process.pid}`);
  cpSync(join(bench.dir, "logs"), kept, { recursive: true });
  console.log(`chaos: the actors' last lines:\n  ${bench.output.slice(-20).join("\n  ")}\nchaos: the mesh's logs are kept in ${kept}`);
  process.exitCode = 1;
} else {
  console.log("chaos: every request answered with its own n, every event and relay call counted exactly once, every kill a restart");
}
