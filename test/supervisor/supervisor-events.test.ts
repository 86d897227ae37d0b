import { describe, expect, test } from "bun:test";
import { EventHub } from "../../src/supervisor/supervisor-events.ts";

describe("EventHub", () => {
  test("listeners get every event until they unsubscribe; a throwing listener harms no one", () => {
    const hub = new EventHub<number>();
    const seen: number[] = [];
    hub.on(() => {
      throw new Error("faulty");
    });
    const off = hub.on((n) => seen.push(n));
    hub.emit(1);
    off();
    hub.emit(2);
    expect(seen).toEqual([1]);
  });

  test("each iterator buffers what it has not read and ends after close", async () => {
    const hub = new EventHub<number>();
    const first = hub.iterate();
    hub.emit(1);
    const second = hub.iterate();
    hub.emit(2);
    hub.close();
    hub.emit(3); // after close: dropped
    const read = async (it: AsyncIterable<number>) => {
      const out: number[] = [];
      for await (const n of it) out.push(n);
      return out;
    };
    expect(await read(first)).toEqual([1, 2]);
    expect(await read(second)).toEqual([2]);
    expect(await read(hub.iterate())).toEqual([]); // made after close: ends at once
  });

  test("a waiting iterator wakes for the next event; breaking out unsubscribes", async () => {
    const hub = new EventHub<string>();
    const got: string[] = [];
    const reading = (async () => {
      for await (const e of hub.iterate()) {
        got.push(e);
        if (e === "b") break;
      }
    })();
    hub.emit("a");
    await Promise.resolve();
    hub.emit("b");
    await reading;
    hub.emit("c");
    expect(got).toEqual(["a", "b"]);
  });
});
