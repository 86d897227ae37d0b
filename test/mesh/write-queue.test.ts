/**
 * The write queue coalesces the frames of one tick into one write: also those of a producer that
 * awaits each send (a frame every microtask turn or two), which without the wait would be a
 * write per frame. Acks ride on those writes, or go alone once per turn.
 */
import { describe, expect, test } from "bun:test";
import { AckEmitter, WriteQueue } from "../../mesh/flow-control.ts";

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

/** A write queue with an ack emitter on it, as a connection wires them; acks are 1-byte frames carrying nothing. */
function ackedQueue() {
  const { writes, socket } = countingSocket();
  const acks: number[] = [];
  let queue!: WriteQueue;
  const emitter = new AckEmitter((seq) => {
    acks.push(seq);
    queue.pushFrame(ACK_FRAME);
  });
  queue = new WriteQueue(socket, emitter.flush);
  emitter.attach(queue);
  return { writes, acks, queue, emitter };
}

const ACK_FRAME = new Uint8Array(1);
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("AckEmitter", () => {
  test("envelopes handled one per microtask within a turn are acknowledged by one frame, on the next turn", async () => {
    const { writes, acks, emitter } = ackedQueue();
    for (let seq = 1; seq <= 1000; seq++) {
      emitter.settle(seq);
      await Promise.resolve(); // a mailbox handling one message per microtask
      await Promise.resolve();
    }
    expect(acks).toEqual([]);
    await nextTurn();
    await nextTurn();
    // Before this was kept, an ack went every few microtask turns: a write per message or two.
    expect(acks).toEqual([1000]);
    expect(writes).toEqual([5]);
  });

  test("an ack rides on a frame sent within the tick (an answer, the next request): one write, no lone ack after", async () => {
    const { writes, acks, queue, emitter } = ackedQueue();
    emitter.settle(1);
    await Promise.resolve();
    queue.pushFrame(FRAME); // the caller's next request, sent from its await continuation
    await nextTurn();
    await nextTurn();
    expect(acks).toEqual([1]);
    expect(writes).toEqual([20 + 5]);
  });

  test("out-of-order settles ack only the contiguous prefix", async () => {
    const { acks, emitter } = ackedQueue();
    emitter.settle(2);
    emitter.settle(3);
    await nextTurn();
    await nextTurn();
    expect(acks).toEqual([]);
    emitter.settle(1);
    await nextTurn();
    await nextTurn();
    expect(acks).toEqual([3]);
  });
});
