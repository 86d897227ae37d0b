/**
 * Backpressure a producer can await: `send` resolves at once while the destination has room
 * and later when it has taken enough, so a loop that awaits it never piles up and never gets
 * code 6, however many events it sends. A real actor process at the other end.
 */
import { describe, expect, test } from "bun:test";
import { waitFor } from "../helpers.ts";
import { startTestMesh } from "./mesh-harness.ts";

const EVENTS = 200_000;

/** True when `promise` has settled within a few microtasks, i.e. it had nothing to wait for. */
async function settlesAtOnce(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  for (let i = 0; i < 3; i++) await Promise.resolve();
  return settled;
}

describe("backpressure", () => {
  test(`a loop awaiting send() delivers ${EVENTS.toLocaleString("en")} events in order, none refused`, async () => {
    await using t = await startTestMesh(`mesh:\n  name: backpressure\nsupervisor:\n  children:\n    - actor: counter\n      module: {FIXTURES}/counter.ts\n`);
    const client = await t.client();
    let waited = 0;
    const started = performance.now();
    for (let i = 0; i < EVENTS; i++) {
      const room = client.send("counter", { i });
      // Most sends find room; some must wait, or this test would not test backpressure.
      if (!(await settlesAtOnce(room))) waited++;
      await room;
    }
    const sentIn = performance.now() - started;
    await waitFor(async () => (await client.request("counter", { op: "count" })).payload.count === EVENTS, "every event to be handled", 60_000);
    const { payload } = await client.request("counter", { op: "count" });
    expect(payload).toEqual({ count: EVENTS, outOfOrder: 0 });
    expect(waited).toBeGreaterThan(0);
    console.log(`${EVENTS} events sent in ${Math.round(sentIn)} ms, ${waited} sends waited for room`);
  }, 120_000);

  test("a loop that ignores the promise is stopped by the hard limit with code 6, nothing lost silently", async () => {
    await using t = await startTestMesh(`mesh:\n  name: nobackpressure\nsupervisor:\n  children:\n    - actor: counter\n      module: {FIXTURES}/counter.ts\n`);
    const client = await t.client();
    await client.request("counter", { op: "count" });
    let sent = 0;
    let refusal: unknown;
    try {
      for (; sent < 500_000; sent++) void client.send("counter", { i: sent });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ code: 6 });
    // The way to go on: wait for room. Then everything accepted before the refusal arrives, in order.
    await client.writable();
    await waitFor(async () => (await client.request("counter", { op: "count" })).payload.count === sent, "the accepted events to be handled", 60_000);
    expect((await client.request("counter", { op: "count" })).payload).toEqual({ count: sent, outOfOrder: 0 });
  }, 120_000);

  test("writable() resolves at once while there is room", async () => {
    await using t = await startTestMesh(`mesh:\n  name: room\nsupervisor:\n  children:\n    - actor: counter\n      module: {FIXTURES}/counter.ts\n`);
    const client = await t.client();
    await client.request("counter", { op: "count" });
    expect(await settlesAtOnce(client.writable())).toBe(true);
    expect(await settlesAtOnce(client.send("counter", { i: 0 }))).toBe(true);
  });
});
