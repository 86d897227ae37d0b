import { describe, expect, test } from "bun:test";
import { Liveness } from "../../mesh/liveness.ts";

const options = { pingIntervalMs: 100, helloTimeoutMs: 500, frameTimeoutMs: 300 };

describe("Liveness", () => {
  test("checks every quarter of its shortest clock, at most once a second (an idle connection wakes its process no more)", () => {
    expect(new Liveness({ pingIntervalMs: 5000, helloTimeoutMs: 5000, frameTimeoutMs: 30_000 }).checkEveryMs).toBe(1000);
    expect(new Liveness(options).checkEveryMs).toBe(25);
    expect(new Liveness({ pingIntervalMs: 60_000, helloTimeoutMs: 200, frameTimeoutMs: 30_000 }).checkEveryMs).toBe(50);
  });

  test("a silent handshake and a frame left unfinished each close the connection with code 2", () => {
    const t0 = Date.now();
    const silent = new Liveness(options);
    expect(silent.check("handshaking", t0 + 400)).toEqual([]);
    expect(silent.check("handshaking", t0 + 600)[0]).toMatchObject({ type: "close", error: { code: 2 } });

    const loris = new Liveness(options);
    loris.received(10, t0);
    loris.received(20, t0 + 250); // more bytes of the same frame do not restart the clock
    expect(loris.check("open", t0 + 250).some((a) => a.type === "close")).toBe(false);
    expect(loris.check("open", t0 + 301)[0]).toMatchObject({ type: "close", error: { message: "frame not completed in time" } });
  });

  test("an idle link is pinged once per interval; three missed pongs mark it unhealthy, traffic heals it", () => {
    const t0 = Date.now();
    const l = new Liveness(options);
    l.received(0, t0);
    expect(l.check("open", t0 + 50)).toEqual([]);
    expect(l.check("open", t0 + 100)).toEqual([{ type: "ping", nonce: 1 }]);
    expect(l.check("open", t0 + 150)).toEqual([]); // one ping per interval
    expect(l.check("open", t0 + 200)).toEqual([{ type: "ping", nonce: 2 }]); // first missed
    expect(l.check("open", t0 + 300)).toEqual([{ type: "ping", nonce: 3 }]); // second missed
    expect(l.check("open", t0 + 400)).toEqual([{ type: "unhealthy", missedPongs: 3 }, { type: "ping", nonce: 4 }]);
    l.received(0, t0 + 410);
    expect(l.check("open", t0 + 420)).toEqual([{ type: "healthy" }]);
    expect(l.stats.pingsSent).toBe(4);
  });

  test("a pong clears the outstanding ping: no miss is counted", () => {
    const t0 = Date.now();
    const l = new Liveness(options);
    l.received(0, t0);
    for (let i = 1; i <= 5; i++) {
      expect(l.check("open", t0 + i * 100)).toEqual([{ type: "ping", nonce: i }]);
      l.pong();
    }
    expect(l.stats.pongsReceived).toBe(5);
  });
});
