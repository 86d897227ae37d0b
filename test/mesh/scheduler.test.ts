import { describe, expect, test } from "bun:test";
import { leastLoaded, roundRobin, Scheduler, weighted, type SchedulingStrategy } from "../../mesh/routing.ts";
import type { RegistryEntry } from "../../mesh/registry.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

function entry(address: string, more: Partial<RegistryEntry> = {}): RegistryEntry {
  const [name, instance] = address.split("#");
  return {
    name: name!, instance: Number(instance ?? 0), address, id: `id-${address}`, socket: `/run/${address}.sock`,
    capabilities: ["ocr"], subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 1,
    ...more,
  };
}

/** Picks `n` times and counts the picks per address. */
function distribution(scheduler: Scheduler, entries: RegistryEntry[], n: number, capability = "ocr"): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const chosen = scheduler.pick(capability, entries);
    if (chosen) counts[chosen.address] = (counts[chosen.address] ?? 0) + 1;
  }
  return counts;
}

function thrown(fn: () => unknown): HermesError {
  try {
    fn();
  } catch (e) {
    if (e instanceof HermesError) return e;
    throw e;
  }
  throw new Error("expected a HermesError");
}

const pool = ["ocr#0", "ocr#1", "ocr#2"].map((a) => entry(a));

describe("roundRobin", () => {
  test("cycles through the candidates in order", () => {
    const scheduler = new Scheduler(roundRobin());
    const order = Array.from({ length: 6 }, () => scheduler.pick("ocr", pool)!.address);
    expect(order).toEqual(["ocr#0", "ocr#1", "ocr#2", "ocr#0", "ocr#1", "ocr#2"]);
  });

  test("stays even when picks for two capabilities interleave", () => {
    const scheduler = new Scheduler(roundRobin());
    const a = [entry("a#0", { capabilities: ["x"] }), entry("a#1", { capabilities: ["x"] })];
    const b = [entry("b#0", { capabilities: ["y"] }), entry("b#1", { capabilities: ["y"] })];
    const counts: Record<string, number> = {};
    for (let i = 0; i < 100; i++) {
      for (const [cap, entries] of [["x", a], ["y", b]] as const) {
        const chosen = scheduler.pick(cap, entries)!.address;
        counts[chosen] = (counts[chosen] ?? 0) + 1;
      }
    }
    expect(counts).toEqual({ "a#0": 50, "a#1": 50, "b#0": 50, "b#1": 50 });
  });
});

describe("leastLoaded", () => {
  test("prefers the lowest queueDepth + inFlight and spreads ties evenly", () => {
    const scheduler = new Scheduler(leastLoaded());
    const entries = [entry("ocr#0", { queueDepth: 1 }), entry("ocr#1"), entry("ocr#2", { inFlight: 2 }), entry("ocr#3")];
    expect(distribution(scheduler, entries, 100)).toEqual({ "ocr#1": 50, "ocr#3": 50 });
  });

  test("counts the caller's own in-flight requests, so a burst spreads over the pool", () => {
    const scheduler = new Scheduler(leastLoaded());
    const local = new Map<string, number>();
    const context = { localInFlight: (a: string) => local.get(a) ?? 0 };
    const entries = [entry("ocr#0"), entry("ocr#1", { queueDepth: 3 }), entry("ocr#2")];
    for (let i = 0; i < 12; i++) {
      const chosen = scheduler.pick("ocr", entries, context)!;
      local.set(chosen.address, (local.get(chosen.address) ?? 0) + 1); // never answered: load only grows
    }
    // ocr#1 starts 3 behind; 12 requests level everyone out at 5 total load.
    expect(Object.fromEntries(local)).toEqual({ "ocr#0": 5, "ocr#1": 2, "ocr#2": 5 });
  });
});

describe("weighted", () => {
  test("shares are proportional to success rate over latency", () => {
    const scheduler = new Scheduler(weighted());
    for (let i = 0; i < 20; i++) {
      scheduler.record("ocr#0", { ok: true, latencyMs: 10 });
      scheduler.record("ocr#1", { ok: true, latencyMs: 20 });
      scheduler.record("ocr#2", { ok: true, latencyMs: 40 });
    }
    expect(distribution(scheduler, pool, 700)).toEqual({ "ocr#0": 400, "ocr#1": 200, "ocr#2": 100 });
  });

  test("failures shrink an instance's share but never to nothing", () => {
    const scheduler = new Scheduler(weighted(), { failureThreshold: 1000 });
    for (let i = 0; i < 30; i++) {
      scheduler.record("ocr#0", { ok: true, latencyMs: 10 });
      scheduler.record("ocr#1", { ok: false, latencyMs: 10 });
    }
    const counts = distribution(scheduler, pool.slice(0, 2), 1000);
    expect(scheduler.stats("ocr#1")!.successRate).toBeLessThan(0.06);
    expect(counts["ocr#0"]!).toBeGreaterThan(900);
    expect(counts["ocr#1"]!).toBeGreaterThan(0);
  });

  test("an instance without statistics gets the average share", () => {
    const scheduler = new Scheduler(weighted());
    scheduler.record("ocr#0", { ok: true, latencyMs: 10 });
    scheduler.record("ocr#1", { ok: true, latencyMs: 30 });
    // New ocr#2 counts as latency 20: weights 1/10, 1/30, 1/20 → 6 : 2 : 3.
    expect(distribution(scheduler, pool, 1100)).toEqual({ "ocr#0": 600, "ocr#1": 200, "ocr#2": 300 });
  });

  test("the EWMA follows recent latency", () => {
    const scheduler = new Scheduler(weighted(), { alpha: 0.5 });
    scheduler.record("ocr#0", { ok: true, latencyMs: 100 });
    scheduler.record("ocr#0", { ok: true, latencyMs: 20 });
    scheduler.record("ocr#0", { ok: false, latencyMs: 20 });
    expect(scheduler.stats("ocr#0")).toEqual({ successRate: 0.5, latencyMs: 40, samples: 3, consecutiveFailures: 1 });
  });
});

describe("Scheduler", () => {
  const strategies: [string, () => SchedulingStrategy][] = [["leastLoaded", leastLoaded], ["roundRobin", roundRobin], ["weighted", weighted]];

  test.each(strategies)("%s never picks an instance that is not healthy or lacks the capability", (_, make) => {
    const scheduler = new Scheduler(make());
    const entries = [
      entry("ocr#0", { health: "starting" }),
      entry("ocr#1", { health: "unhealthy" }),
      entry("ocr#2", { health: "down" }),
      entry("ocr#3"),
      entry("ocr#4", { capabilities: ["other"] }),
    ];
    expect(distribution(scheduler, entries, 50)).toEqual({ "ocr#3": 50 });
    expect(scheduler.pick("ocr", entries.slice(0, 3))).toBeUndefined();
  });

  test("a circuit opens after N consecutive failures and lets one trial through after the cool-down", () => {
    let now = 1000;
    const scheduler = new Scheduler(roundRobin(), { failureThreshold: 3, coolDownMs: 500, now: () => now });
    const entries = pool.slice(0, 2);
    for (let i = 0; i < 3; i++) scheduler.record("ocr#1", { ok: false, latencyMs: 5 });
    expect(scheduler.isOpen("ocr#1")).toBe(true);
    expect(distribution(scheduler, entries, 10)).toEqual({ "ocr#0": 10 });

    now += 500; // cool-down over: exactly one trial call goes to ocr#1
    expect(distribution(scheduler, entries, 10)).toEqual({ "ocr#0": 9, "ocr#1": 1 });
    scheduler.record("ocr#1", { ok: false, latencyMs: 5 }); // the trial failed: open again
    now += 499;
    expect(distribution(scheduler, entries, 4)).toEqual({ "ocr#0": 4 });

    now += 1;
    expect(distribution(scheduler, entries, 4)).toEqual({ "ocr#0": 3, "ocr#1": 1 });
    scheduler.record("ocr#1", { ok: true, latencyMs: 5 }); // the trial succeeded: closed
    expect(scheduler.isOpen("ocr#1")).toBe(false);
    expect(distribution(scheduler, entries, 10)).toEqual({ "ocr#0": 5, "ocr#1": 5 });
  });

  test("a success resets the failure count, so scattered failures never open the circuit", () => {
    const scheduler = new Scheduler(roundRobin(), { failureThreshold: 2 });
    for (let i = 0; i < 10; i++) {
      scheduler.record("ocr#0", { ok: false, latencyMs: 1 });
      scheduler.record("ocr#0", { ok: true, latencyMs: 1 });
    }
    expect(scheduler.isOpen("ocr#0")).toBe(false);
  });

  test("pickOrThrow: code 8 when nobody declares the capability, code 10 when nobody is available", () => {
    let now = 0;
    const scheduler = new Scheduler(leastLoaded(), { failureThreshold: 1, coolDownMs: 300, now: () => now });
    const unknown = thrown(() => scheduler.pickOrThrow("tts", pool));
    expect(unknown.code).toBe(ErrorCode.UNROUTABLE);
    expect(unknown.fields).toEqual({ target: "tts", known: ["ocr"] });

    const sick = thrown(() => scheduler.pickOrThrow("ocr", [entry("ocr#0", { health: "unhealthy" })]));
    expect(sick.code).toBe(ErrorCode.UNAVAILABLE);
    expect(sick.fields.retry_after_ms).toBe(1000);

    scheduler.record("ocr#0", { ok: false, latencyMs: 1 });
    now = 100;
    const open = thrown(() => scheduler.pickOrThrow("ocr", [entry("ocr#0")]));
    expect(open.code).toBe(ErrorCode.UNAVAILABLE);
    expect(open.fields.retry_after_ms).toBe(200);
    now = 300;
    expect(scheduler.pickOrThrow("ocr", [entry("ocr#0")]).address).toBe("ocr#0");
  });

  test("forget drops the statistics and closes the circuit", () => {
    const scheduler = new Scheduler(roundRobin(), { failureThreshold: 1 });
    scheduler.record("ocr#0", { ok: false, latencyMs: 1 });
    expect(scheduler.isOpen("ocr#0")).toBe(true);
    scheduler.forget("ocr#0");
    expect(scheduler.isOpen("ocr#0")).toBe(false);
    expect(scheduler.stats("ocr#0")).toBeUndefined();
  });

  test("the default strategy is leastLoaded", () => {
    expect(new Scheduler().strategy.name).toBe("least_loaded");
  });
});
