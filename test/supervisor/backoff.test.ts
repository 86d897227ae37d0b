import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../mesh/errors.ts";
import { Backoff } from "../../src/supervisor/backoff.ts";
import { Harness } from "./supervisor-harness.ts";

/** A fixed cycle of "random" numbers. */
const cycle = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length]!;
};

describe("Backoff", () => {
  test("without jitter the delays double up to the cap", () => {
    const backoff = new Backoff({ initialMs: 10, maxMs: 100, jitter: 0 });
    expect(Array.from({ length: 6 }, (_, i) => backoff.next(i))).toEqual([10, 20, 40, 80, 100, 100]);
  });

  test("jitter moves each delay within ±jitter, deterministically for a given random source", () => {
    const delays = (random: () => number) => {
      const backoff = new Backoff({ initialMs: 100, maxMs: 10_000, jitter: 0.2, random });
      return Array.from({ length: 4 }, (_, i) => backoff.next(i));
    };
    expect(delays(() => 0)).toEqual([80, 160, 320, 640]); // -20%
    expect(delays(() => 0.5)).toEqual([100, 200, 400, 800]); // nominal
    expect(delays(() => 0.999_999)).toEqual([120, 240, 480, 960]); // +20%
    expect(delays(cycle(0.1, 0.9, 0.3, 0.7))).toEqual(delays(cycle(0.1, 0.9, 0.3, 0.7)));
    expect(delays(cycle(0.1, 0.9, 0.3, 0.7))).toEqual([84, 232, 368, 864]);
  });

  test("with Math.random the delays still grow and stay within the jitter band", () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 100_000 });
    const delays = Array.from({ length: 8 }, (_, i) => backoff.next(i));
    delays.forEach((delay, i) => {
      expect(delay).toBeGreaterThanOrEqual(Math.floor(100 * 2 ** i * 0.8));
      expect(delay).toBeLessThanOrEqual(Math.ceil(100 * 2 ** i * 1.2));
    });
    expect(new Set(delays.map((d, i) => d / 2 ** i)).size).toBeGreaterThan(1); // not all on the nominal
  });

  test("the cap holds with jitter, and defaults are 10 ms / 1000 ms / ×2 / ±20%", () => {
    const backoff = new Backoff({ random: () => 0.999_999 });
    const delays = Array.from({ length: 10 }, (_, i) => backoff.next(i));
    expect(delays.slice(0, 3)).toEqual([12, 24, 48]);
    expect(Math.max(...delays)).toBe(1000);
  });

  test("resets after a quiet period", () => {
    const backoff = new Backoff({ initialMs: 10, jitter: 0, resetAfterMs: 1000 });
    expect([backoff.next(0), backoff.next(500), backoff.next(1400)]).toEqual([10, 20, 40]);
    expect(backoff.next(2400)).toBe(10); // 1000 ms since the last one
    expect(backoff.attempt).toBe(1);
  });

  test("refuses nonsensical options", () => {
    expect(() => new Backoff({ initialMs: 100, maxMs: 10 })).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_REQUEST }));
    expect(() => new Backoff({ jitter: 2 })).toThrow();
    expect(() => new Backoff({ factor: 0.5 })).toThrow();
  });

  test("a supervisor restarts a crashing child at once, then waits the growing delays", async () => {
    await using h = new Harness();
    const at: Record<string, number[]> = { exited: [], started: [] };
    const sup = h.supervisor({
      id: "root",
      intensity: 3,
      backoff: { initialMs: 40, jitter: 0.2, random: () => 0 }, // 32, 64 ms after the first
      children: [h.child("crashy", { flags: ["exit=1"] })],
    });
    sup.onEvent((e) => at[e.type]?.push(performance.now()));
    await sup.start();
    await sup.exited;
    const delays = h.events.flatMap((e) => (e.type === "restarting" ? [e.delayMs] : []));
    expect(delays).toEqual([0, 32, 64]);
    // Each restart started no sooner than its delay after the crash before it.
    for (let i = 0; i < 3; i++) expect(at.started![i + 1]! - at.exited![i]!).toBeGreaterThanOrEqual(delays[i]! - 1);
  });
});
