/**
 * The actor scenarios' harness parts (restart, footprint, hop), checked for correctness with
 * tiny sizes, never for speed: a restart sample is one real restart (new pid, stages in
 * order), memory readings are plausible for live processes, the hop returns one sample per
 * round trip, and every instance of a pool answers.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readEvents } from "../../src/observability/event-log-reader.ts";
import { join } from "node:path";
import { meshHop } from "../../bench/adapters/mesh-hop.ts";
import { meshEvents, meshEventsTraced } from "../../bench/adapters/mesh-stream.ts";
import { rawEcho } from "../../bench/adapters/raw-echo.ts";
import { sampled } from "../../bench/adapters/sampled.ts";
import { countAnswering, footprintMeshYaml, poolAddresses } from "../../bench/footprint.bench.ts";
import { measureHops } from "../../bench/hop.bench.ts";
import { runCleanups } from "../../bench/lib/cleanup.ts";
import { LatencyHistogram } from "../../bench/lib/histogram.ts";
import { spawnIdleBun } from "../../bench/lib/idle-bun.ts";
import { startBenchMesh } from "../../bench/lib/mesh.ts";
import { UNPINNED } from "../../bench/lib/placement.ts";
import { processMemory } from "../../bench/lib/proc-memory.ts";
import { formatValue, targetStatus, type Figure } from "../../bench/lib/report.ts";
import { tempDir } from "../../bench/lib/scenario.ts";
import { waitFor } from "../helpers.ts";
import { breakdown, measureRestarts, quantile, restartMeshYaml, STAGES, type RestartSample } from "../../bench/restart.bench.ts";

afterAll(runCleanups);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("restart", () => {
  test("each sample is a real restart: a new pid, the old one gone, stages in order", async () => {
    await using mesh = await startBenchMesh(restartMeshYaml("restart-test"));
    const client = await mesh.client();
    const first = mesh.pid("echo");
    const killed: number[] = [];
    const samples = await measureRestarts(mesh, client, { kills: 2, spacingMs: 150, onKill: () => killed.push(mesh.pid("echo")) });
    expect(samples).toHaveLength(2);
    expect(killed[0]).toBe(first);
    for (const [i, s] of samples.entries()) {
      expect(s.pidBefore).toBe(killed[i]!);
      expect(alive(s.pidBefore)).toBe(false);
      expect(s.stages.firstAnswer).toBeGreaterThan(0);
      expect(s.gapMs).toBeGreaterThanOrEqual(s.stages.firstAnswer);
      // Marks the supervisor and registry always give, in the order a restart goes through them.
      const { exitSeen, restartDecided, spawned, registered, ready } = s.stages;
      for (const at of [exitSeen, restartDecided, spawned, registered, ready]) expect(at).toBeGreaterThan(0);
      expect(exitSeen!).toBeLessThanOrEqual(restartDecided!);
      expect(restartDecided!).toBeLessThanOrEqual(spawned!);
      expect(spawned!).toBeLessThan(registered!);
      expect(registered!).toBeLessThanOrEqual(ready!);
      expect(s.delayMs).toBeGreaterThanOrEqual(0);
      expect(s.steadyCompleted).toBeGreaterThan(0);
      expect(s.windowCompleted).toBeGreaterThanOrEqual(s.steadyCompleted);
    }
    // The second kill hit the process the first restart started.
    expect(killed[1]).not.toBe(first);
    expect(samples[0]!.pidAfter).toBe(killed[1]!);
    const now = mesh.pid("echo");
    expect(killed).not.toContain(now);
    expect(alive(now)).toBe(true);
    expect((await client.request("echo", { n: 1 }, { timeoutMs: 2000 })).payload).toEqual({ n: 1 });
  }, 20_000);

  test("gives up, naming the kill, when the actor does not come back", async () => {
    await using mesh = await startBenchMesh(`mesh: { name: restart-gone }
supervisor:
  children:
    - { actor: echo, module: "{ACTORS}/echo.ts", restart: temporary }
`);
    const client = await mesh.client();
    const pid = mesh.pid("echo");
    await expect(measureRestarts(mesh, client, { kills: 1, spacingMs: 50, maxWaitMs: 200 })).rejects.toThrow(/did not answer within 200 ms of kill -9 1/);
    expect(alive(pid)).toBe(false);
  }, 20_000);

  test("breakdown and quantiles from known samples", () => {
    const sample = (firstAnswer: number, registered?: number): RestartSample => ({
      pidBefore: 1, pidAfter: 2, delayMs: 1, gapMs: firstAnswer, windowCompleted: 0, steadyCompleted: 0, failed: 0, quietWaitMs: 0,
      stages: { exitSeen: 2, ...(registered !== undefined && { registered }), firstAnswer },
    });
    const text = breakdown([sample(60, 50), sample(70, 40), sample(80)]);
    expect(text).toBe(`${STAGES[0]![1]} 2.0 [+2.0], ${STAGES.find(([k]) => k === "registered")![1]} 45.0 [+43.0], ${STAGES.at(-1)![1]} 70.0 [+25.0]`);
    expect(quantile([5, 1, 4, 2, 3], 50)).toBe(3);
    expect(quantile([5, 1, 4, 2, 3], 90)).toBe(5);
    expect(quantile([5, 1, 4, 2, 3], 100)).toBe(5);
    expect(quantile([], 50)).toBe(0);
  });
});

describe("footprint", () => {
  test("memory of live processes is plausible; a gone process throws", async () => {
    const self = processMemory(process.pid);
    expect(self.rss).toBeGreaterThan(5);
    expect(self.rss).toBeLessThan(4096);
    expect(self.anon + self.file).toBeLessThanOrEqual(self.rss + 1);
    await using idle = await spawnIdleBun("bare");
    expect(idle.readyMs).toBeGreaterThan(0);
    const child = processMemory(idle.pid);
    expect(child.rss).toBeGreaterThan(5);
    expect(child.rss).toBeLessThan(self.rss + 1024);
    if (child.pss !== undefined) expect(child.pss).toBeLessThanOrEqual(child.rss + 0.1);
    await idle[Symbol.asyncDispose]();
    expect(() => processMemory(idle.pid)).toThrow();
  }, 20_000);

  test("every instance of a pool answers, each its own process", async () => {
    expect(poolAddresses(1)).toEqual(["echo"]);
    expect(poolAddresses(3)).toEqual(["echo#0", "echo#1", "echo#2"]);
    await using mesh = await startBenchMesh(footprintMeshYaml("footprint-test", 3));
    const pids = mesh.pids();
    expect(new Set(pids).size).toBe(3);
    for (const pid of pids) expect(processMemory(pid).rss).toBeGreaterThan(5);
    expect(await countAnswering(mesh, 3)).toBe(3);
  }, 20_000);

  test("a mesh's actors are gone after dispose", async () => {
    let pids: number[];
    {
      await using mesh = await startBenchMesh(footprintMeshYaml("footprint-gone", 2));
      pids = mesh.pids();
      expect(pids).toHaveLength(2);
    }
    for (const pid of pids) expect(alive(pid)).toBe(false);
  }, 20_000);
});

describe("hop", () => {
  test("the pinger returns one positive sample per actor-to-actor round trip", async () => {
    using dir = tempDir();
    await using session = await meshHop.open({ dir: dir.path, placement: UNPINNED });
    const samples = await session.roundTrips(5);
    expect(samples).toHaveLength(5);
    for (const ns of samples) expect(ns).toBeGreaterThan(0);
    const histogram = new LatencyHistogram();
    const count = await measureHops(session, 0, histogram, 7);
    expect(count).toBe(7);
    expect(histogram.count).toBe(7);
  }, 20_000);

  test("a sampled socket peer times each round trip", async () => {
    using dir = tempDir();
    await using session = await sampled(rawEcho).open({ dir: dir.path, placement: UNPINNED });
    const samples = await session.roundTrips(3);
    expect(samples).toHaveLength(3);
    for (const ns of samples) expect(ns).toBeGreaterThan(0);
  }, 20_000);
});

describe("actor path events", () => {
  /** The sink's `handled` records of events, from its event log (none when it has no log). */
  const handledEvents = (meshDir: string): number =>
    readEvents(join(meshDir, "logs", "sink.jsonl")).filter((e) => e.event === "handled" && e.type === "event").length;

  test("the traced contender's sink writes a trace line per event, the other none, and both count every event", async () => {
    using dir = tempDir();
    // Opened side by side: the untraced sink has had as long as the traced one to write lines.
    await using plain = await meshEvents.open({ dir: dir.path, placement: UNPINNED });
    await using traced = await meshEventsTraced.open({ dir: dir.path, placement: UNPINNED });
    for (const session of [plain, traced]) {
      await session.send(1_001);
      expect(await session.received()).toBe(1_001);
    }
    // The event log writes its lines 200 ms after the first, or on exit.
    await waitFor(() => handledEvents(traced.meshDir!) >= 1_001, "the traced sink's 1,001 trace lines", 10_000);
    expect(handledEvents(traced.meshDir!)).toBe(1_001);
    expect(handledEvents(plain.meshDir!)).toBe(0);
  }, 30_000);
});

describe("reporting of the new figures", () => {
  const rss: Figure = { scenario: "footprint", name: "idle actor RSS", placement: "x", unit: "MB", value: 30, better: "lower", target: { maxValue: 32 } };

  test("a maxValue target is met at or below the value", () => {
    expect(targetStatus(rss)).toBe("met (<= 32.0 MB)");
    expect(targetStatus({ ...rss, value: 32 })).toStartWith("met");
    expect(targetStatus({ ...rss, value: 32.1 })).toBe("MISSED (<= 32.0 MB)");
  });

  test("ms, MB and counts print as such", () => {
    expect(formatValue(4131.9, "ms")).toBe("4131.9 ms");
    expect(formatValue(56, "MB")).toBe("56.0 MB");
    expect(formatValue(50, "actors")).toBe("50 actors");
  });
});
