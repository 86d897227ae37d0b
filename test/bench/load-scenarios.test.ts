/**
 * The load scenarios' harness parts (hop payload sweep, chain, fanout, fanin, openloop,
 * charts), checked for correctness with tiny sizes, never for speed: payloads have the sizes
 * they claim, a trip comes back after exactly its hops, a publication reaches each subscriber
 * exactly once, senders' messages are all counted, the open-loop maths holds on synthetic
 * timelines, and the SVG is well-formed with the expected series.
 */
import { encode } from "@msgpack/msgpack";
import { afterAll, describe, expect, test } from "bun:test";
import { hermesFanin, rawFanin } from "../../bench/adapters/fan-in.ts";
import { hermesRequest } from "../../bench/adapters/hermes-request.ts";
import { meshFanout } from "../../bench/adapters/mesh-fanout.ts";
import { meshRing } from "../../bench/adapters/mesh-ring.ts";
import { rawEcho } from "../../bench/adapters/raw-echo.ts";
import { rawFanout } from "../../bench/adapters/raw-fanout.ts";
import { rawPipelined } from "../../bench/adapters/raw-pipelined.ts";
import { rawRing } from "../../bench/adapters/raw-ring.ts";
import { sampled } from "../../bench/adapters/sampled.ts";
import type { FaninPeer, FanoutPeer, RingPeer } from "../../bench/adapters/types.ts";
import { memberCpu, slope } from "../../bench/chain.bench.ts";
import { faninCpus } from "../../bench/fanin.bench.ts";
import { burstProblems, latencyProblems } from "../../bench/fanout.bench.ts";
import { batchFor } from "../../bench/hop.bench.ts";
import { offeredRates } from "../../bench/openloop.bench.ts";
import { chartsFromFigures, splitPercentile, type Chart } from "../../bench/lib/chart-data.ts";
import { runCleanups } from "../../bench/lib/cleanup.ts";
import { LatencyHistogram } from "../../bench/lib/histogram.ts";
import { monoNow, monoPrecise } from "../../bench/lib/mono-clock.ts";
import { runOpenLoop, schedule, type LoopClock } from "../../bench/lib/open-loop.ts";
import { PAYLOAD_SIZES, payloadOf, rawOf, sizeLabel } from "../../bench/lib/payload.ts";
import { BOTH_CORES, CROSS_CORE, measuredPlacements, SAME_CORE, UNPINNED } from "../../bench/lib/placement.ts";
import type { Figure } from "../../bench/lib/report.ts";
import { tempDir } from "../../bench/lib/scenario.ts";
import { escapeXml, svgPage } from "../../bench/lib/svg-chart.ts";

afterAll(runCleanups);

describe("hop payload sweep", () => {
  test("every payload of the sweep encodes to exactly its size (standard MessagePack)", () => {
    for (const bytes of PAYLOAD_SIZES) {
      expect(encode(payloadOf(bytes)).length).toBe(bytes);
      expect(rawOf(bytes).length).toBe(bytes);
    }
    expect(() => payloadOf(20)).toThrow(RangeError);
    expect(PAYLOAD_SIZES.map(sizeLabel)).toEqual(["64 B", "128 B", "1 KiB", "16 KiB", "256 KiB"]);
    expect(batchFor(128)).toBeGreaterThan(batchFor(262_144));
  });

  test("socket contenders carry every size, the raw one past the kernel's buffer (256 KiB both ways)", async () => {
    using dir = tempDir();
    for (const peer of [sampled(rawEcho), sampled(hermesRequest, "hermes transport")]) {
      await using session = await peer.open({ dir: dir.path, placement: UNPINNED });
      for (const bytes of [64, 262_144]) {
        const samples = await session.roundTrips(3, bytes);
        expect(samples).toHaveLength(3);
        for (const ns of samples) expect(ns).toBeGreaterThan(0);
      }
    }
  }, 30_000);
});

describe("chain", () => {
  for (const peer of [meshRing, rawRing] as RingPeer[]) {
    test(`${peer.name}: a trip comes back after exactly its hops, each member forwarding once per trip it is on`, async () => {
      using dir = tempDir();
      await using ring = await peer.open({ dir: dir.path, size: 4 });
      expect(ring.pids).toHaveLength(4);
      const long = await ring.trips(3, 4);
      const short = await ring.trips(2, 2);
      expect(long.hopsSeen).toEqual([4, 4, 4]);
      expect(short.hopsSeen).toEqual([2, 2]);
      for (const ns of [...long.samples, ...short.samples]) expect(ns).toBeGreaterThan(0);
      // 4 hops pass members 1, 2, 3; 2 hops pass member 1 only; the start forwards nothing.
      expect(await ring.forwarded()).toEqual([0, 5, 3, 3]);
      await expect(ring.trips(1, 5)).rejects.toThrow(RangeError);
    }, 30_000);
  }

  test("growth slope and alternating placement", () => {
    expect(slope([[2, 20], [4, 40], [8, 80]])).toBeCloseTo(10, 9);
    expect(slope([[2, 5], [4, 5]])).toBe(0);
    expect(slope([[3, 7]])).toBe(0);
    expect([0, 1, 2, 3].map((i) => memberCpu(CROSS_CORE, i))).toEqual([0, 1, 0, 1]);
    expect([0, 1, 2, 3].map((i) => memberCpu(SAME_CORE, i))).toEqual([0, 0, 0, 0]);
  });
});

describe("fanout", () => {
  for (const peer of [meshFanout, rawFanout] as FanoutPeer[]) {
    test(`${peer.name}: every subscriber of the audience gets each publication exactly once`, async () => {
      using dir = tempDir();
      await using fan = await peer.open({ dir: dir.path, size: 4 });
      expect(fan.pids).toHaveLength(5);
      for (const subscribers of [1, 4]) {
        const r = await fan.latency(3, subscribers);
        expect(r.delivered).toHaveLength(3);
        expect(r.reported).toHaveLength(3);
        expect(latencyProblems(r, subscribers)).toEqual([]);
        for (let i = 0; i < 3; i++) {
          expect(r.delivered[i]!).toBeGreaterThan(0);
          expect(r.delivered[i]!).toBeLessThanOrEqual(r.reported[i]!);
        }
        const b = await fan.burst(300, subscribers);
        expect(b.counts).toEqual(new Array(subscribers).fill(300));
        expect(b.ns).toBeGreaterThan(0);
      }
    }, 30_000);
  }

  test("the actor audiences are distinct subscribers", async () => {
    using dir = tempDir();
    await using fan = await meshFanout.open({ dir: dir.path, size: 4 });
    expect((await fan.latency(1, 4)).reporters.sort()).toEqual(["sub0", "sub1", "sub2", "sub3"]);
    expect((await fan.latency(1, 1)).reporters).toEqual(["sub0"]);
  }, 30_000);

  test("problems are named: duplicates, missing reporters, short counts", () => {
    expect(latencyProblems({ duplicates: 0, reporters: ["a", "b"] }, 2)).toEqual([]);
    expect(latencyProblems({ duplicates: 1, reporters: ["a", "b"] }, 2)).toEqual(["1 duplicate reports"]);
    expect(latencyProblems({ duplicates: 0, reporters: ["a", "a"] }, 2)).toEqual(["2 reporters (1 distinct) for 2 subscribers"]);
    expect(burstProblems([5, 5], 5, 2)).toEqual([]);
    expect(burstProblems([5, 4], 5, 2)).toEqual(["subscribers counted 4 of a burst of 5"]);
    expect(burstProblems([5], 5, 2)).toEqual(["1 of 2 subscribers reported a burst"]);
  });

  test("the machine-wide clock agrees between processes", async () => {
    const before = monoNow();
    const child = Bun.spawnSync([process.execPath, "-e", `import { monoNow } from "${import.meta.dir}/../../bench/lib/mono-clock.ts"; console.log(monoNow())`]);
    const after = monoNow();
    const theirs = Number(child.stdout.toString().trim());
    if (monoPrecise()) {
      expect(theirs).toBeGreaterThan(before);
      expect(theirs).toBeLessThan(after);
    }
  });
});

describe("fanin", () => {
  for (const peer of [hermesFanin, rawFanin] as FaninPeer[]) {
    test(`${peer.name}: the receiver counts every message of every sender`, async () => {
      using dir = tempDir();
      await using fan = await peer.open({ dir: dir.path, senders: 2 });
      expect(fan.pids).toHaveLength(3);
      await fan.burst(1500, 2);
      await fan.burst(700, 1);
      expect(await fan.received()).toBe(3700);
    }, 30_000);
  }

  test("placements: the receiver apart in cross core, everything on both cores unpinned", () => {
    expect([0, 1, 2].map((i) => faninCpus(CROSS_CORE, i))).toEqual(["1", "0", "0"]);
    expect([0, 1].map((i) => faninCpus(SAME_CORE, i))).toEqual(["0", "0"]);
    expect(faninCpus(BOTH_CORES, 3, 2)).toBe("0-1");
    expect(faninCpus(UNPINNED, 0)).toBeUndefined();
  });

  test("--quick measures cross core alone where there is one; the full run every placement", () => {
    expect(measuredPlacements(true, [SAME_CORE, CROSS_CORE])).toEqual([CROSS_CORE]);
    expect(measuredPlacements(false, [SAME_CORE, CROSS_CORE, BOTH_CORES])).toEqual([SAME_CORE, CROSS_CORE, BOTH_CORES]);
    expect(measuredPlacements(true, [SAME_CORE])).toEqual([SAME_CORE]);
    expect(measuredPlacements(true, [UNPINNED])).toEqual([UNPINNED]);
  });
});

/**
 * A simulated timeline for the open-loop generator: virtual ns that move only when the
 * generator sleeps or yields (10 us per yield), and a FIFO server with a fixed service time
 * that may freeze for a while; answers resolve when the timeline passes them.
 */
class Timeline implements LoopClock {
  t = 0;
  #due: Array<{ at: number; fire: () => void }> = [];
  #freeAt = 0;

  constructor(readonly serviceNs: number, readonly stall?: { from: number; to: number }) {}

  now = () => this.t;
  sleep = (ms: number) => this.#advance(ms * 1e6);
  yield = () => this.#advance(10_000);

  /** A request to the FIFO server. */
  serve = (): Promise<void> => {
    let start = Math.max(this.t, this.#freeAt);
    if (this.stall && start >= this.stall.from && start < this.stall.to) start = this.stall.to;
    this.#freeAt = start + this.serviceNs;
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#due.push({ at: this.#freeAt, fire: resolve });
    return promise;
  };

  async #advance(ns: number): Promise<void> {
    const target = this.t + ns;
    for (;;) {
      this.#due.sort((a, b) => a.at - b.at);
      const next = this.#due[0];
      if (!next || next.at > target) break;
      this.#due.shift();
      this.t = next.at;
      next.fire();
      await new Promise((r) => setImmediate(r)); // let the answer's callbacks run at this time
    }
    this.t = target;
  }
}

describe("open-loop maths on synthetic timelines", () => {
  test("the schedule is t0 + i / rate, rate x duration sends", () => {
    const s = schedule(1000, 2000, 10);
    expect(s).toHaveLength(20);
    expect(s[0]).toBe(1000);
    expect(s[1]! - s[0]!).toBe(500_000);
    expect(s.at(-1)).toBe(1000 + 19 * 500_000);
  });

  test("an idle server: latency is the service time, achieved equals offered", async () => {
    const tl = new Timeline(100_000);
    const r = await runOpenLoop(tl.serve, { rate: 1000, durationMs: 50 }, tl);
    expect(r.scheduled).toBe(50);
    expect(r.completed).toBe(50);
    expect(r.saturated).toBe(false);
    const s = r.fromScheduled.summary();
    expect(s.p50).toBeGreaterThanOrEqual(100);
    expect(s.max).toBeLessThanOrEqual(100 + 10 + 0.2); // the send may leave up to one 10 us poll late
    expect(r.achieved).toBeGreaterThan(950);
    expect(r.achieved).toBeLessThan(1050);
  });

  test("a server stall: every request scheduled during it is slow, not just the one in flight", async () => {
    const tl = new Timeline(100_000, { from: 50e6, to: 60e6 });
    const r = await runOpenLoop(tl.serve, { rate: 1000, durationMs: 100 }, tl);
    expect(r.completed).toBe(100);
    // About 10 of the 100 requests fall in the 10 ms stall (a closed loop would have recorded one slow sample).
    const s = r.fromScheduled.summary();
    expect(s.count).toBe(100);
    expect(s.p50).toBeLessThan(200);
    expect(s.p90).toBeGreaterThanOrEqual(1000);
    expect(s.max).toBeGreaterThan(9_900);
  });

  test("a generator stall counts from the scheduled time, not from the late send", async () => {
    const tl = new Timeline(50_000);
    let n = 0;
    const stalling = () => {
      if (++n === 10) tl.t += 20e6; // this send blocks the generator's loop for 20 ms
      return tl.serve();
    };
    const r = await runOpenLoop(stalling, { rate: 1000, durationMs: 40 }, tl);
    expect(r.completed).toBe(40);
    // The 20 requests due during the stall left together, up to 20 ms late: from their schedule
    // half the samples are slow (1 to 20 ms); from the actual send only the stalled send itself
    // is, the others wait no more than the burst's own queue (20 x 50 us).
    expect(r.sendLag.summary().max).toBeGreaterThan(19_000);
    expect(r.fromScheduled.summary().p90).toBeGreaterThan(10_000);
    expect(r.fromScheduled.summary().max).toBeGreaterThan(19_000);
    expect(r.fromSent.summary().p90).toBeLessThanOrEqual(1_100);
  });

  test("offered above capacity: achieved is the capacity and latency grows along the run", async () => {
    const tl = new Timeline(2e6); // 500/s
    const r = await runOpenLoop(tl.serve, { rate: 1000, durationMs: 40 }, tl);
    expect(r.completed).toBe(40);
    expect(r.achieved).toBeGreaterThan(480);
    expect(r.achieved).toBeLessThan(520);
    // The last of 40 requests (scheduled at 39 ms) is answered at 80 ms.
    expect(r.fromScheduled.summary().max).toBeGreaterThan(39_000);
  });

  test("offered rates: fixed ones and fractions of the closed-loop maximum, ascending, no repeats", () => {
    expect(offeredRates(40_000)).toEqual([1000, 5000, 20_000, 36_000]);
    expect(offeredRates(10_000)).toEqual([1000, 5000, 9000, 20_000]);
    expect(offeredRates(100)).toEqual([100, 1000, 5000, 20_000]);
  });

  test("histograms travel between processes and add up", () => {
    const a = new LatencyHistogram();
    for (let i = 1; i <= 1000; i++) a.record(i * 1000);
    const b = LatencyHistogram.decode(a.encode());
    const { max, ...rest } = a.summary();
    expect(b.summary()).toMatchObject(rest);
    expect(Math.abs(b.summary().max - max)).toBeLessThanOrEqual(max * 0.001); // the encoding keeps buckets: max to 3 digits
    b.add(a);
    expect(b.count).toBe(2000);
    const curve = a.curve();
    expect(curve[0]![0]).toBe(0);
    expect(curve.at(-1)).toEqual([100, a.summary().max]);
    expect(curve.some(([p]) => p === 99.99)).toBe(false); // 1000 samples do not reach p99.99
  });
});

describe("the raw pipelined baseline", () => {
  test("answers in order with many outstanding", async () => {
    using dir = tempDir();
    await using session = await rawPipelined.open({ dir: dir.path, placement: UNPINNED });
    const r = await session.run({ rate: 2000, durationMs: 50 });
    expect(r.completed).toBe(r.scheduled);
    expect(r.failed).toBe(0);
    expect(await session.closedLoop(8, 30)).toBeGreaterThan(0);
  }, 20_000);
});

/** Well-formed XML, as far as SVG goes: tags balance, attributes are quoted, text has no bare < or &. */
function checkXml(xml: string): void {
  const body = xml.replace(/^<\?xml[^>]*\?>\s*/, "");
  const stack: string[] = [];
  const tag = /<(\/?)([a-zA-Z][\w-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tag.exec(body); m; m = tag.exec(body)) {
    const text = body.slice(last, m.index);
    expect(text).not.toMatch(/<|&(?!amp;|lt;|gt;|quot;)/);
    last = tag.lastIndex;
    const [, close, name, , selfClose] = m;
    if (close) expect(stack.pop()).toBe(name);
    else if (!selfClose) stack.push(name!);
  }
  expect(body.slice(last).trim()).toBe("");
  expect(stack).toEqual([]);
}

describe("charts", () => {
  const charts: Chart[] = [
    { kind: "percentiles", title: "hop <same core> & more", series: [{ label: "actor hop", points: [[0, 10], [50, 20], [99, 80], [100, 400]] }, { label: "raw socket", points: [[0, 5], [50, 11], [99, 30], [100, 90]] }] },
    { kind: "lines", title: "chain", xLabel: "hops", yLabel: "us", series: [{ label: "actor ring p50", points: [[2, 40], [4, 80], [8, 160]] }, { label: "raw ring p50", points: [[2, 12], [4, 24], [8, 48]] }] },
    { kind: "bars", title: "stream", unit: "msg/s", bars: [{ label: "hermes window 4096", value: 500_000 }, { label: "raw socket", value: 9_000_000, baseline: true }] },
  ];

  test("an SVG page is well-formed, one panel per chart, one line per series, text escaped", () => {
    const svg = svgPage("bench <test>", charts);
    checkXml(svg);
    expect(svg).toStartWith("<?xml");
    expect(svg.match(/<g transform=/g)).toHaveLength(3);
    expect(svg.match(/<polyline /g)).toHaveLength(4);
    expect(svg.match(/<rect x="140"/g)).toHaveLength(2); // two bars, after the narrowest label column
    expect(svg).toContain("hop &lt;same core&gt; &amp; more");
    for (const label of ["actor hop", "raw socket", "actor ring p50", "raw ring p50", "hermes window 4096"]) expect(svg).toContain(`>${label}</text>`);
    expect(escapeXml(`a<b>&"c"`)).toBe("a&lt;b&gt;&amp;&quot;c&quot;");
  });

  test("a bar chart's label column is as wide as its longest label needs", () => {
    const long = "actor to actor requests, 1000 outstanding msg/s";
    const svg = svgPage("t", [{ kind: "bars", title: "stream", unit: "msg/s", bars: [{ label: long, value: 30_000 }, { label: "raw", value: 9e6, baseline: true }] }]);
    // Every rect but the page's background is a bar, and each starts where the labels end.
    const [barX, ...rest] = [...svg.matchAll(/<rect x="(\d+)"/g)].map((m) => Number(m[1])).filter((x) => x > 0);
    expect(rest).toEqual([barX!]);
    expect(barX).toBeGreaterThanOrEqual(6 * long.length);
    expect(barX).toBeLessThanOrEqual(360);
  });

  test("resvg, when installed, renders the page as a PNG", async () => {
    let Resvg: typeof import("@resvg/resvg-js").Resvg;
    try {
      ({ Resvg } = await import("@resvg/resvg-js"));
    } catch {
      return; // PNG output is optional: the harness notes when it is skipped
    }
    const png = new Resvg(svgPage("t", charts)).render().asPng();
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  });

  test("charts derived from figures: percentile curves per contender, bars per throughput unit", () => {
    const lat = (p: string, v: number, b: number): Figure => ({ scenario: "pingpong", name: `hermes request ${p}`, placement: "same core", unit: "us", value: v, better: "lower", baseline: { name: `raw socket ${p}`, value: b } });
    const figures: Figure[] = [lat("p50", 20, 11), lat("p90", 25, 12), lat("p99", 40, 20), lat("p99.9", 90, 40), lat("max", 900, 300),
      { scenario: "pingpong", name: "Bun IPC p50", placement: "same core", unit: "us", value: 14, better: "lower" },
      { scenario: "stream", name: "hermes window 1024 envelopes/s", placement: "same core", unit: "msg/s", value: 5e5, better: "higher", baseline: { name: "raw socket frames/s", value: 9e6 } },
      { scenario: "stream", name: "hermes window 4096 envelopes/s", placement: "same core", unit: "msg/s", value: 4e5, better: "higher", baseline: { name: "raw socket frames/s", value: 9e6 } }];
    const ping = chartsFromFigures("pingpong", figures);
    expect(ping).toHaveLength(1);
    const curves = ping[0] as Extract<Chart, { kind: "percentiles" }>;
    expect(curves.series.map((s) => s.label)).toEqual(["hermes request", "raw socket"]); // a single point is no curve
    expect(curves.series[0]!.points).toEqual([[50, 20], [90, 25], [99, 40], [99.9, 90], [100, 900]]);
    const stream = chartsFromFigures("stream", figures);
    expect(stream).toHaveLength(1);
    expect((stream[0] as Extract<Chart, { kind: "bars" }>).bars.map((b) => [b.label, b.baseline ?? false])).toEqual([
      ["hermes window 1024 envelopes/s", false], ["raw socket frames/s", true], ["hermes window 4096 envelopes/s", false],
    ]);
    expect(splitPercentile("actor hop 16 KiB p99.9")).toEqual(["actor hop 16 KiB", 99.9]);
    expect(splitPercentile("publications/s to 4")).toBeUndefined();
  });
});
