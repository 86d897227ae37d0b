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
 * Checked at the end, once the load has stopped and every answer is in, that nothing was lost
 * and nothing done twice:
 * - every request was answered, with its own `n` worked by a worker, or failed with code 10
 *   because it ran out of delivery attempts (`max_attempts`, docs/protocol.md §4: its caller is
 *   told, and its relay call ran at most once);
 * - the ledger counted every event and every relay call of an answered request exactly once
 *   (the client's and the relay's redeliveries and the durable stores' deduplication together),
 *   and an event the client dead-lettered at most once;
 * - each kill was followed by a restart (the supervisor's count at least the kills), and every
 *   instance is back at the end.
 * Reported too: what was given up on after the attempts (requests, and events, with how many of
 * those had been handled all the same), the answers' latency while the kills went on (p50, p99, max), the longest
 * stretch without an answer, and the supervisor's backoff before each restart (an instance
 * killed again within the restart period waits up to a second: docs/actors.md, "Backoff").
 *
 * Run: `bun bench/chaos.ts [seconds] [kill every ms, low-high]` (default 60 and 250-750).
 */
import { cpSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MeshClient } from "../src/actor/connect-mesh.ts";
import { ErrorCode, HermesError } from "../mesh/errors.ts";
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

/** Broken promises by kind, each with how often and its first few cases. */
const problems = new Map<string, { count: number; cases: string[] }>();
const problem = (kind: string, example: string) => {
  const entry = problems.get(kind) ?? { count: 0, cases: [] };
  entry.count++;
  if (entry.cases.length < 5) entry.cases.push(example);
  problems.set(kind, entry);
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
const answeredNs: number[] = [];
/** Requests the client gave up on after max_attempts deliveries (code 10): reported to their callers, not lost. */
const gaveUp = new Set<number>();
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
      answeredNs.push(n);
      answeredAt.push(at);
      if (answer.n !== n || answer.worked !== n) problem("requests answered with another's result", `${n}: ${JSON.stringify(answer)}`);
    } catch (error) {
      const key = error instanceof HermesError ? `code ${error.code}: ${error.message}` : String(error);
      failures.set(key, (failures.get(key) ?? 0) + 1);
      // Code 10 after max_attempts is the mesh saying so (docs/protocol.md §4); anything else is not.
      if (error instanceof HermesError && error.code === ErrorCode.UNAVAILABLE && /delivery attempts/.test(error.message)) gaveUp.add(n);
      else problem("requests failed otherwise than by running out of attempts", `${n}: ${key}`);
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
if (!settled) problem(`requests never settled (${SETTLE_MS} ms after the end)`, "the load did not settle");
const totalKills = [...kills.values()].reduce((a, b) => a + b, 0);

// Every instance back, then the ledger's counts once every event has reached it.
const deadline = Date.now() + SETTLE_MS;
while (VICTIMS.some((a) => registry.byAddress(a)?.health !== "healthy") && Date.now() < deadline) await Bun.sleep(50);
const down = VICTIMS.filter((a) => registry.byAddress(a)?.health !== "healthy");
for (const address of down) problem("instances not back after the kills", `${address}: ${registry.byAddress(address)?.health}`);
const deadEvents = new Set(client.deadLetters().filter((d) => d.envelope.message_type === "event").map((d) => String(d.envelope.payload.key)));
// The list keeps the newest 1,000: past that, an event counted 0 may have been given up on, not lost.
const overflowed = client.deadLetters().length >= 1000;
let uncertain = 0;
let counts: Record<string, number> = {};
// The relay's events go out after its answers, so the last may still be on their way: counted
// again until everything that must arrive has, or nothing more came for 2 s.
for (let last = -1, still = 0; Date.now() < deadline && still < 20; ) {
  counts = (await client.request("ledger", { op: "counts" }, { timeoutMs: 30_000 })).payload.counts as Record<string, number>;
  const keys = Object.keys(counts).length;
  const missing = answeredNs.some((n) => counts[`relay-${n}`] === undefined) || Array.from({ length: events }, (_, i) => `ev-${i}`).some((k) => counts[k] === undefined && !deadEvents.has(k));
  if (!missing) break;
  still = keys === last ? still + 1 : 0;
  last = keys;
  await Bun.sleep(100);
}
// A dead letter is the sender saying it could not confirm delivery, after max_attempts: such an
// event may have been handled (its acks lost with the receiver) but never twice; a request the
// caller was told had failed may have run at most once.
let deadButDelivered = 0;
for (let i = 0; i < events; i++) {
  const key = `ev-${i}`;
  const seen = counts[key] ?? 0;
  if (seen === 1 && deadEvents.has(key)) deadButDelivered++;
  if (seen > 1) problem("events handled twice", `${key}: ${seen}`);
  else if (seen === 0 && !deadEvents.has(key)) {
    if (overflowed) uncertain++;
    else problem("events lost without a dead letter", key);
  }
}
for (let n = 0; n < nextRequest; n++) {
  const seen = counts[`relay-${n}`] ?? 0;
  if (seen > 1 || (seen === 0 && !gaveUp.has(n))) problem(seen > 1 ? "relay calls run twice" : "relay calls of answered requests missing", `relay-${n}: ${seen}`);
}
const strays = Object.keys(counts).filter((k) => !/^(ev|relay)-\d+$/.test(k) || Number(k.split("-")[1]) >= (k.startsWith("ev") ? events : nextRequest));
for (const key of strays) problem("keys the ledger counted that nobody sent", key);
const restarts = VICTIMS.reduce((sum, a) => sum + (registry.byAddress(a)?.restarts ?? 0), 0);
if (restarts < totalKills) problem("kills without a restart", `${totalKills} kills, ${restarts} restarts`);
const strangeDead = client.deadLetters().filter((d) => !(d.envelope.message_type === "event" || gaveUp.has(d.envelope.payload.n as number)));
for (const dead of strangeDead) problem("dead letters of another kind", `${dead.envelope.message_type} to ${dead.destination}: ${dead.error.detail}`);

const sorted = latencies.filter((_, i) => answeredAt[i]! <= stoppedAt).sort((a, b) => a - b);
const pct = (p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);
let longestGap = 0;
// From the start to the end of the kills: a silence at either end counts too.
const times = [startedAt, ...answeredAt.filter((t) => t <= stoppedAt).sort((a, b) => a - b), stoppedAt];
for (let i = 1; i < times.length; i++) longestGap = Math.max(longestGap, times[i]! - times[i - 1]!);
const sortedBackoffs = backoffs.sort((a, b) => a - b);
console.log(`chaos: ${totalKills} kills (${[...kills].map(([a, k]) => `${a} ${k}`).join(", ")}), ${restarts} restarts counted by the supervisor; backoff before a restart p50 ${sortedBackoffs[sortedBackoffs.length >> 1] ?? 0} ms, max ${sortedBackoffs.at(-1) ?? 0} ms (a child's repeated crashes)`);
console.log(`chaos: ${nextRequest} requests, ${latencies.length} answered, ${[...failures.values()].reduce((a, b) => a + b, 0)} failed${failures.size ? ` (${[...failures].map(([k, v]) => `${v}x ${k}`).join("; ")})` : ""}; ${events} events`);
console.log(`chaos: given up after ten delivery attempts (dead letters, reported): ${gaveUp.size} requests (code 10 to their callers), ${deadEvents.size} events (${deadButDelivered} of them handled all the same, once)`);
if (uncertain > 0) console.log(`chaos: ${uncertain} events not counted while the dead-letter list was full (it keeps 1,000): given up on or lost, this run cannot tell`);
console.log(`chaos: answers during the kills p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms, max ${pct(100).toFixed(1)} ms; longest stretch without an answer ${longestGap.toFixed(1)} ms`);
if (problems.size > 0) {
  console.log(`chaos: FAILED\n${[...problems].map(([kind, { count, cases }]) => `  ${kind}: ${count} (${cases.join("; ")}${count > cases.length ? "; ..." : ""})`).join("\n")}`);
  const kept = join(tmpdir(), `hermes-chaos-logs-${process.pid}`);
  cpSync(join(bench.dir, "logs"), kept, { recursive: true });
  console.log(`chaos: the actors' last lines:\n  ${bench.output.slice(-20).join("\n  ")}\nchaos: the mesh's logs are kept in ${kept}`);
  process.exitCode = 1;
} else {
  console.log("chaos: nothing lost and nothing twice: every request answered with its own n or failed with code 10, every event and relay call counted once (or, given up on, at most once), every kill a restart");
}
