/** The dashboard's rolling history: bounded ring, rates and quantiles from heartbeat counters, eviction, cursors; and its sampler's sources. */
import { describe, expect, test } from "bun:test";
import { appendFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { DeadLetter } from "../../mesh/peer-link.ts";
import { type RegistryEntry, Registry } from "../../mesh/registry.ts";
import { LATENCY_BUCKETS } from "../../src/observability/actor-metrics.ts";
import { DashboardHistory, type ActorCounters } from "../../src/gateway/dashboard-history.ts";
import { HistorySampler } from "../../src/gateway/history-sampler.ts";
import { tempDir, waitFor } from "../helpers.ts";

/** Counters as a heartbeat carries them: `perBucket` maps a LATENCY_BUCKETS index (or the +Inf index) to how many fell in it. */
function counters(at: number, perBucket: Record<number, number>, extra: Partial<ActorCounters> = {}): ActorCounters {
  const counts = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  for (const [i, n] of Object.entries(perBucket)) counts[Number(i)]! += n;
  let running = 0;
  const cumulative = counts.map((n) => (running += n));
  return { handled: { request: running }, errors: {}, redeliveries: 0, latency_buckets: cumulative, latency_sum_seconds: 0, latency_count: running, at, started_at: 0, ...extra };
}

const entry = (address: string, extra: Partial<RegistryEntry> = {}): RegistryEntry => ({
  name: address, instance: 0, address, id: `id-${address}`, socket: `/tmp/${address}.sock`, capabilities: [],
  subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 1, kind: "actor", ...extra,
});

describe("DashboardHistory", () => {
  test("rate and p50/p99 of one step come from the difference of two snapshots over their own times", () => {
    const h = new DashboardHistory({ stepMs: 1000, windowMs: 10_000 });
    h.record(1000, { echo: counters(900, {}) });
    // 60 messages in (0.5 ms, 1 ms], 40 in (5 ms, 10 ms], over the 2 s between the snapshots.
    h.record(2000, { echo: counters(2900, { 3: 60, 6: 40 }) });
    const view = h.view();
    expect(view.times).toEqual([1000, 2000]);
    expect(view.actors.echo!.rate).toEqual([null, 50]);
    expect(view.actors.echo!.p50_ms[1]).toBeCloseTo(0.5 + 0.5 * (50 / 60), 3); // rank 50 of 100, inside the 0.5–1 ms bucket
    expect(view.actors.echo!.p99_ms[1]).toBeCloseTo(5 + 5 * (39 / 40), 3); // rank 99, inside 5–10 ms
    // The next step sees only its own messages: 10 more, all in (1 ms, 2.5 ms].
    h.record(3000, { echo: counters(3900, { 3: 60, 6: 40, 4: 10 }) });
    const next = h.view(view.seq);
    expect(next.times).toEqual([3000]);
    expect(next.actors.echo!.rate).toEqual([10]);
    expect(next.actors.echo!.p50_ms[0]).toBeCloseTo(1 + 1.5 * 0.5, 3);
    // Slower than the last finite bound: the quantile says 10 s, not infinity.
    h.record(4000, { echo: counters(4900, { 3: 60, 6: 40, 4: 10, [LATENCY_BUCKETS.length]: 5 }) });
    expect(h.view(next.seq).actors.echo!.p99_ms).toEqual([10_000]);
  });

  test("no new heartbeat gives no point; an idle step has rate 0 and no quantiles; restarted counters count from the process start", () => {
    const h = new DashboardHistory({ stepMs: 1000, windowMs: 10_000 });
    h.record(1000, { a: counters(1000, { 2: 4 }) });
    h.record(2000, { a: counters(1000, { 2: 4 }) }); // the same snapshot again
    h.record(3000, { a: counters(3000, { 2: 4 }) }); // a new one, nothing handled
    h.record(4000, { a: counters(4000, { 2: 3 }, { started_at: 3500 }) }); // a new process: 3 since 3.5 s
    const a = h.view().actors.a!;
    expect(a.rate).toEqual([null, null, 0, 6]);
    expect(a.p50_ms.slice(0, 3)).toEqual([null, null, null]);
    expect(a.p50_ms[3]).toBeGreaterThan(0.25);
    expect(a.p50_ms[3]).toBeLessThanOrEqual(0.5);
    // An actor that started after the history did counts from its start at once: nothing it handled is lost.
    const t0 = h.started;
    h.record(t0 + 2000, { b: counters(t0 + 2000, { 1: 8 }, { started_at: t0 + 1000 }) }); // 8 in the second since it started
    expect(h.view().actors.b!.rate.at(-1)).toBe(8);
  });

  test("the ring keeps one window of samples, however many were recorded", () => {
    const h = new DashboardHistory({ stepMs: 1000, windowMs: 5000 });
    expect(h.capacity).toBe(5);
    for (let i = 0; i < 23; i++) h.record(i * 1000, { echo: counters(i * 1000, { 1: i * 2 }) });
    const view = h.view();
    expect(view.times).toEqual([18_000, 19_000, 20_000, 21_000, 22_000]);
    expect(view.actors.echo!.rate).toEqual([2, 2, 2, 2, 2]);
    expect(view.window_ms).toBe(5000);
    expect(view.step_ms).toBe(1000);
  });

  test("at most maxActors series: an absent actor gives way to a new one, one that aged out is dropped, a full house leaves newcomers untracked", () => {
    const h = new DashboardHistory({ stepMs: 1000, windowMs: 3000, maxActors: 2 });
    h.record(0, { a: counters(0, {}), b: counters(0, {}) });
    h.record(1000, { a: counters(1000, { 1: 1 }), b: counters(1000, { 1: 1 }), c: counters(1000, {}) });
    expect(h.actorCount).toBe(2);
    expect(h.view().untracked_actors).toBe(1); // both tracked ones are present: no room for c
    h.record(2000, { b: counters(2000, { 1: 2 }), c: counters(2000, {}) }); // a is gone: c takes its place
    expect(h.actorCount).toBe(2);
    expect(h.view().untracked_actors).toBe(0);
    expect(Object.keys(h.view().actors).sort()).toEqual(["b"]); // c has no point yet, a was evicted
    for (let t = 3000; t <= 6000; t += 1000) h.record(t, { c: counters(t, {}) });
    expect(h.actorCount).toBe(1); // b's points aged out of the window
    expect(Object.keys(h.view().actors)).toEqual(["c"]);
  });

  test("timeline and dead letters are bounded, cut long reasons, and follow the cursor; a rising dead-letter count becomes an entry", () => {
    const h = new DashboardHistory({ maxEvents: 3, maxDeadLetters: 2 });
    for (let i = 0; i < 5; i++) h.addEvent({ at: i, actor: "echo", kind: "crash", exit_code: i, signal: null });
    expect(h.view().timeline.map((e) => e.exit_code)).toEqual([2, 3, 4]);
    const cursor = h.view().seq;
    h.addEvent({ at: 9, actor: "calc", kind: "restart", restarts: 1, reason: "x".repeat(10_000) });
    const after = h.view(cursor);
    expect(after.timeline).toHaveLength(1);
    expect(after.timeline[0]!.reason!.length).toBeLessThanOrEqual(300);
    expect(after.times).toEqual([]);

    h.record(0, { w: counters(0, {}, { dead_letters: 5 }) }); // counts from before the first sample are not news
    expect(h.view().dead_letters).toEqual([]);
    h.record(1000, { w: counters(1000, {}, { dead_letters: 7 }) });
    expect(h.view().dead_letters).toEqual([expect.objectContaining({ at: 1000, sender: "w", count: 2 })]);
    for (let i = 0; i < 4; i++) h.addDeadLetter({ at: i, sender: "gateway", target: "t", code: 10, reason: `r${i}`, count: 1 });
    expect(h.view().dead_letters.map((d) => d.reason)).toEqual(["r2", "r3"]);
  });
});

describe("HistorySampler", () => {
  test("reads crashes and restarts from the supervisor log (also after a rotation), the gateway's dead letters, and only the registry's actors", async () => {
    using dir = tempDir();
    const log = join(dir.path, "supervisor.jsonl");
    const now = Date.now();
    writeFileSync(log, [
      JSON.stringify({ ts: now - 3_600_000, actor: "supervisor", event: "exited", child: "old", exit: { code: 1, signal: null }, normal: false }), // before the window
      JSON.stringify({ ts: now, actor: "supervisor", event: "started", child: "echo", pid: 10, restarts: 0 }),
      JSON.stringify({ ts: now + 1, actor: "supervisor", event: "exited", child: "echo", pid: 10, exit: { code: null, signal: "SIGKILL", reason: "killed by SIGKILL" }, normal: false, willRestart: true }),
      "not json",
      JSON.stringify({ ts: now + 2, actor: "supervisor", event: "restart", child: "echo", pid: 11, restarts: 1 }),
      "",
    ].join("\n"));
    const registry = new Registry();
    registry.upsert(entry("echo"));
    registry.upsert(entry("gateway", { kind: "client" }));
    const letters: DeadLetter[] = [];
    let stats: Record<string, ActorCounters> = { echo: counters(now, {}), gone: counters(now, {}) };
    const sampler = new HistorySampler({ registry, stats: async () => stats, deadLetters: () => letters, supervisorLog: log }, { stepMs: 1, windowMs: 100 });

    await sampler.tick();
    let view = sampler.history.view();
    expect(view.timeline.map((e) => [e.actor, e.kind, e.signal ?? e.restarts])).toEqual([["echo", "crash", "SIGKILL"], ["echo", "restart", 1]]);
    expect(sampler.history.actorCount).toBe(1); // "gone" is not in the registry

    // A line written in two pieces is read once it is whole; a rotated (new) file from its start.
    appendFileSync(log, JSON.stringify({ ts: now + 3, event: "exited", child: "echo", exit: { code: 3, signal: null }, normal: false }).slice(0, 20));
    letters.push({ envelope: { message_id: "m1", trace_id: "t1", source_agent: "gateway" } as DeadLetter["envelope"], destination: "crasher", error: { error_code: 10, error_name: "UNAVAILABLE", detail: "gave up after 10 delivery attempts to crasher" }, at: now });
    stats = { echo: counters(now + 1000, { 2: 5 }) };
    await waitFor(async () => (await sampler.tick(), sampler.history.view().dead_letters.length > 0), "the second sample");
    view = sampler.history.view();
    expect(view.timeline).toHaveLength(2);
    expect(view.dead_letters).toEqual([expect.objectContaining({ sender: "gateway", target: "crasher", code: 10, code_name: "UNAVAILABLE", trace_id: "t1", count: 1 })]);
    expect(view.actors.echo!.rate).toContain(5);

    renameSync(log, join(dir.path, "supervisor.1.jsonl"));
    writeFileSync(log, `${JSON.stringify({ ts: now + 4, event: "intensity_exceeded", child: "echo", supervisor: "root", intensity: 1, period: 5000 })}\n`);
    await waitFor(async () => (await sampler.tick(), sampler.history.view().timeline.length > 2), "the rotated log read");
    view = sampler.history.view();
    expect(view.timeline.at(-1)).toMatchObject({ actor: "echo", kind: "gave_up" });
    expect(view.dead_letters).toHaveLength(1); // the same dead letter is not counted twice
  });

  test("without a supervisor log, a rising restart count in the registry is a restart on the timeline", async () => {
    const registry = new Registry();
    registry.upsert(entry("calc"));
    const sampler = new HistorySampler({ registry, stats: async () => ({}) }, { stepMs: 1, windowMs: 100 });
    await sampler.tick();
    registry.patch("calc", { restarts: 1, pid: 42, updatedAt: 5 });
    await waitFor(async () => (await sampler.tick(), sampler.history.view().timeline.length > 0), "the restart on the timeline");
    expect(sampler.history.view().timeline).toEqual([{ at: 5, actor: "calc", kind: "restart", restarts: 1, pid: 42 }]);
  });
});
