/**
 * The write queue coalesces the frames of one tick into one write: also those of a producer that
 * awaits each send (a frame every microtask turn or two), which without the wait would be a
 * write per frame.
 */
import { describe, expect, test } from "bun:test";
import { WriteQueue } from "../../mesh/flow-control.ts";

/** A socket that takes everything and counts its writes. */
function countingSocket() {
  const writes: number[] = [];
  return { writes, socket: { write: (data: Uint8Array) => (writes.push(data.length), data.length) } };
}

const FRAME = new Uint8Array(16);

describe("WriteQueue", () => {
  test("a producer awaiting after each frame gets many frames per write", async () => {
    const { writes, socket } = countingSocket();
    const queue = new WriteQueue(socket);
    for (let i = 0; i < 1000; i++) {
      queue.pushFrame(FRAME);
      await Promise.resolve(); // what `await send(...)` costs while there is room
    }
    await queue.whenFlushed();
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes.reduce((a, b) => a + b, 0)).toBe(1000 * 20);
    // At most one write per 32 frames (64 turns at most per write), where it was one per frame.
    expect(writes.length).toBeLessThanOrEqual(1000 / 32);
  });

  test("a lone frame is written within the same tick, before any timer or I/O callback", async () => {
    const { writes, socket } = countingSocket();
    const queue = new WriteQueue(socket);
    queue.pushFrame(FRAME);
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([20]);
  });

  test("the ack hook runs once per write, just before it", async () => {
    const { writes, socket } = countingSocket();
    let hooks = 0;
    const queue = new WriteQueue(socket, () => {
      hooks++;
      expect(writes.length).toBe(hooks - 1);
    });
    for (let i = 0; i < 10; i++) queue.pushFrame(FRAME);
    await new Promise((resolve) => setImmediate(resolve));
    expect([hooks, writes.length]).toEqual([1, 1]);
  });
});
