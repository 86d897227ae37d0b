/**
 * The benchmark harness's own correctness (never its speed): histogram percentile maths on
 * known data, ratio and target reporting, interleaving order, and that the stream scenario's
 * adapters deliver every message they claim to have sent; the check for a mesh at rest.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { hermesStream } from "../../bench/adapters/hermes-stream.ts";
import { rawStream } from "../../bench/adapters/raw-stream.ts";
import { runCleanups } from "../../bench/lib/cleanup.ts";
import { childPids, childrenQuiet, cpuNanoseconds } from "../../bench/lib/cpu-time.ts";
import { LatencyHistogram, median } from "../../bench/lib/histogram.ts";
import { UNPINNED } from "../../bench/lib/placement.ts";
import { formatTable, ratio, targetStatus, type Figure } from "../../bench/lib/report.ts";
import { rotated, tempDir } from "../../bench/lib/scenario.ts";
import { waitFor } from "../helpers.ts";

/** HdrHistogram with 3 significant digits: every reported value is within 0.1% of the exact one. */
function expectClose(actual: number, expected: number): void {
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(expected * 0.001 + 1e-9);
}

describe("LatencyHistogram", () => {
  test("percentiles of a uniform 1..10000 us distribution", () => {
    const h = new LatencyHistogram();
    for (let us = 1; us <= 10_000; us++) h.record(us * 1000);
    const s = h.summary();
    expect(s.count).toBe(10_000);
    expectClose(s.p50, 5000);
    expectClose(s.p90, 9000);
    expectClose(s.p99, 9900);
    expectClose(s.p999, 9990);
    expectClose(s.max, 10_000);
    expectClose(s.mean, 5000.5);
  });

  test("a slow tail shows in p99.9 and max, not in p50 or p99", () => {
    const h = new LatencyHistogram();
    for (let i = 0; i < 990; i++) h.record(10_000); // 10 us
    for (let i = 0; i < 10; i++) h.record(2_000_000); // 2 ms
    const s = h.summary();
    expectClose(s.p50, 10);
    expectClose(s.p99, 10);
    expectClose(s.p999, 2000);
    expectClose(s.max, 2000);
  });

  test("an empty histogram reports zeros; sub-nanosecond samples still count", () => {
    expect(new LatencyHistogram().summary()).toEqual({ count: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0 });
    const h = new LatencyHistogram();
    h.record(0);
    expect(h.count).toBe(1);
  });

  test("median of odd, even and empty lists", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBe(0);
  });
});

describe("reporting", () => {
  const latency: Figure = {
    scenario: "pingpong", name: "hermes p50", placement: "same core", unit: "us", value: 13, better: "lower",
    baseline: { name: "raw p50", value: 10 }, target: { maxRatio: 1.3 },
  };

  test("ratio is value over baseline, and the target is judged on it", () => {
    expect(ratio(latency)).toBeCloseTo(1.3);
    expect(targetStatus(latency)).toStartWith("met");
    expect(targetStatus({ ...latency, value: 14 })).toStartWith("MISSED");
    expect(targetStatus({ ...latency, target: { minValue: 1e6 }, value: 999_999 })).toStartWith("MISSED");
    expect(ratio({ ...latency, baseline: undefined })).toBeUndefined();
  });

  test("the table puts every figure next to its baseline and ratio", () => {
    const table = formatTable([latency]).split("\n");
    expect(table).toHaveLength(3);
    expect(table[2]).toContain("13.0 us");
    expect(table[2]).toContain("10.0 us");
    expect(table[2]).toContain("1.30x");
  });

  test("rounds rotate the contenders' order", () => {
    expect(rotated(["a", "b", "c"], 0)).toEqual(["a", "b", "c"]);
    expect(rotated(["a", "b", "c"], 1)).toEqual(["b", "c", "a"]);
    expect(rotated(["a", "b", "c"], 5)).toEqual(["c", "a", "b"]);
  });
});

describe("stream adapters deliver every message", () => {
  // A test that fails or times out still disposes its session; should an await hang, this
  // kills the fixture and removes the socket directory anyway (bun test fires no "exit").
  afterAll(runCleanups);
  // Counts that are not multiples of a window, a refill batch or a raw write batch.
  const BURSTS = [40_001, 3_333];

  for (const peer of [hermesStream(1024), hermesStream(8192), rawStream]) {
    test(peer.name, async () => {
      using dir = tempDir();
      await using session = await peer.open({ dir: dir.path, placement: UNPINNED });
      let total = 0;
      for (const n of BURSTS) {
        await session.send(n);
        total += n;
        // send() resolved: the receiver acknowledged all, so its count is already final.
        expect(await session.received()).toBe(total);
      }
      expect(session.frameBytes).toBeGreaterThan(128);
    });
  }
});

describe("childPids and childrenQuiet (the restart scenario's wait for a mesh at rest)", () => {
  test("a busy child keeps the mesh from being quiet; left out, the idle one is quiet", async () => {
    const spawn = (code: string) => Bun.spawn([process.execPath, "-e", code], { stdout: "pipe", stderr: "inherit" });
    const idle = spawn("console.log('up'); setInterval(() => {}, 1000)");
    const busy = spawn("console.log('up'); for (;;) {}");
    try {
      for (const child of [idle, busy]) await child.stdout.getReader().read(); // started
      expect(childPids()).toEqual(expect.arrayContaining([idle.pid, busy.pid]));
      const allQuiet = childrenQuiet({ windowMs: 20 });
      const idleQuiet = childrenQuiet({ windowMs: 20, except: () => busy.pid });
      // Three whole windows of each: the busy child spins through every one of them.
      const verdicts: boolean[] = [];
      const until = performance.now() + 3 * 20 + 5;
      await waitFor(() => {
        verdicts.push(allQuiet());
        return performance.now() >= until;
      }, "three windows sampled");
      expect(verdicts.some((quiet) => quiet)).toBe(false);
      await waitFor(() => idleQuiet(), "the idle child counted quiet once the busy one is left out", 10_000);
    } finally {
      idle.kill("SIGKILL");
      busy.kill("SIGKILL");
      await Promise.all([idle.exited, busy.exited]);
    }
  }, 20_000);
});

describe("cpuNanoseconds", () => {
  test("this process's CPU keeps the time of a thread that has ended", async () => {
    using dir = tempDir();
    const burner = join(dir.path, "burn.ts");
    // About 100 ms of CPU on a worker thread, which then ends.
    writeFileSync(burner, "const end = performance.now() + 100; let x = 0; while (performance.now() < end) x++; postMessage(x);");
    const workerThreads = () => readdirSync("/proc/self/task").filter((tid) => readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim() === "Worker").length;
    const before = cpuNanoseconds("self");
    const worker = new Worker(burner);
    const done = Promise.withResolvers<void>();
    worker.onmessage = () => done.resolve();
    await done.promise;
    worker.terminate();
    // Summed over the threads in /proc, the worker's time would leave with it.
    await waitFor(() => workerThreads() === 0, "the worker's thread gone");
    expect(cpuNanoseconds("self") - before).toBeGreaterThanOrEqual(80e6);
  });
});
