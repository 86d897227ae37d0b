import { describe, expect, test } from "bun:test";
import { sampleRequest } from "./sample-envelope.ts";
import { type Envelope, arrivedExpired, forwardEnvelope, remainingTtl, takeWaitOff, ttlDeadline } from "../../mesh/envelope.ts";

const envelope = (ttl: number): Envelope => sampleRequest({ ttl, seq: 4 });

describe("forwardEnvelope", () => {
  test("subtracts the time held", () => {
    expect(forwardEnvelope(envelope(5000), 1000, 1003)!.ttl).toBe(4997);
  });

  test("subtracts at least 1 ms per hop, even with no time held or a clock that went back", () => {
    expect(forwardEnvelope(envelope(5000), 1000, 1000)!.ttl).toBe(4999);
    expect(forwardEnvelope(envelope(5000), 1000, 900)!.ttl).toBe(4999);
  });

  test("keeps trace_id and every other field, drops seq, and leaves the original alone", () => {
    const original = envelope(5000);
    const next = forwardEnvelope(original, 1000, 1010)!;
    expect(next.trace_id).toBe("trace-1");
    expect("seq" in next).toBe(false);
    const { seq: _seq, ttl: _ttl, ...rest } = original;
    expect(next).toEqual({ ...rest, ttl: 4990 });
    expect(original.seq).toBe(4);
    expect(original.ttl).toBe(5000);
  });

  test("returns null when nothing is left", () => {
    expect(forwardEnvelope(envelope(1), 1000, 1000)).toBeNull();
    expect(forwardEnvelope(envelope(5), 1000, 1005)).toBeNull();
    expect(forwardEnvelope(envelope(0), 1000, 1000)).toBeNull();
    expect(forwardEnvelope(envelope(-3), 1000, 1000)).toBeNull();
    expect(forwardEnvelope(envelope(6), 1000, 1005)!.ttl).toBe(1);
  });

  test("a routing loop always runs out", () => {
    let env: Envelope | null = envelope(50);
    let hops = 0;
    while (env) {
      env = forwardEnvelope(env, 0, 0);
      hops++;
    }
    expect(hops).toBe(50);
  });
});

describe("ttl helpers", () => {
  test("arrivedExpired is true at 0 and below", () => {
    expect(arrivedExpired({ ttl: 0 })).toBe(true);
    expect(arrivedExpired({ ttl: -1 })).toBe(true);
    expect(arrivedExpired({ ttl: 1 })).toBe(false);
  });

  test("remainingTtl counts only time since arrival, never negative elapsed time", () => {
    expect(remainingTtl({ ttl: 100 }, 1000, 1030)).toBe(70);
    expect(remainingTtl({ ttl: 100 }, 1000, 1200)).toBe(-100);
    expect(remainingTtl({ ttl: 100 }, 1000, 900)).toBe(100);
  });

  test("ttlDeadline is arrival plus ttl", () => {
    expect(ttlDeadline({ ttl: 250 }, 10_000)).toBe(10_250);
  });
});

describe("takeWaitOff", () => {
  test("takes the wait off once: asked again at the same moment, nothing more; a clock that went back takes nothing", () => {
    const held = { env: envelope(5000), since: 1000 };
    expect(takeWaitOff(held, 1300).ttl).toBe(4700);
    expect(held.since).toBe(1300);
    expect(takeWaitOff(held, 1300).ttl).toBe(4700);
    expect(takeWaitOff(held, 1200).ttl).toBe(4700);
    expect(takeWaitOff(held, 6000).ttl).toBe(-100);
  });
});
