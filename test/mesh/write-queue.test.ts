/**
 * The write queue coalesces the frames of one event-loop turn into one write at its end: those of
 * several callbacks the runtime makes in that turn (HTTP requests that came together, each handled
 * in its own callback), and those of a producer that awaits each send. Acks ride on those writes,
 * or go alone once per turn. The send window keeps
 * what is in flight and parked in order.
 */
import { describe, expect, test } from "bun:test";
import { AckEmitter, SendWindow, WriteQueue } from "../../mesh/flow-control.ts";
import { createEvent, type Envelope } from "../../mesh/envelope.ts";
import { waitFor } from "../helpers.ts";

/** A socket that takes everything and counts its writes. */
function countingSocket() {
  const writes: number[] = [];
  return { writes, socket: { write: (_data: Uint8Array, _offset: number, length: number) => (writes.push(length), length) } };
}

/** A socket that takes at most `most` bytes per write and keeps what it took, in order. */
function narrowSocket(most: number) {
  const taken: number[] = [];
  return { taken, socket: { write: (data: Uint8Array, offset: number, length: number) => {
    const n = Math.min(most, length);
    for (let i = 0; i < n; i++) taken.push(data[offset + i]!);
    return n;
  } } };
}

const FRAME = new Uint8Array(16);

describe("WriteQueue", () => {
  test("a producer awaiting after each frame gets one write for all of them", async () => {
    const { writes, socket } = countingSocket();
    const queue = new WriteQueue(socket);
    for (let i = 0; i < 1000; i++) {
      queue.pushFrame(FRAME);
      await Promise.resolve(); // what `await send(...)` costs while there is room
    }
    await queue.whenFlushed();
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes.reduce((a, b) => a + b, 0)).toBe(1000 * 20);
    // 20,000 bytes, under the high-water mark: one write, where it was one per frame.
    expect(writes).toEqual([1000 * 20]);
  });

  test("a lone frame is written at the end of the turn, after the microtasks", async () => {
    const { writes, socket } = countingSocket();
    const queue = new WriteQueue(socket);
    queue.pushFrame(FRAME);
    for (let i = 0; i < 100; i++) await Promise.resolve();
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([20]);
  });

  test("frames of several callbacks in one turn share one write, though microtasks ran between them", async () => {
    const { writes, socket } = countingSocket();
    const queue = new WriteQueue(socket);
    const microtasksBetween: boolean[] = [];
    // Timers due together fire in one turn, the microtask queue drained after each: as Bun.serve calls its handler per request.
    await new Promise<void>((resolve) => {
      for (let i = 0; i < 3; i++) {
        setTimeout(() => {
          queue.pushFrame(FRAME);
          queueMicrotask(() => microtasksBetween.push(writes.length === 0));
          if (i === 2) setImmediate(resolve);
        }, 0);
      }
    });
    expect(microtasksBetween).toEqual([true, true, true]);
    expect(writes).toEqual([60]);
  });

  test("frames given as ranges of bigger buffers go out as those bytes, in order, across partial writes", async () => {
    const { taken, socket } = narrowSocket(7);
    const queue = new WriteQueue(socket);
    const source = Uint8Array.from({ length: 300 }, (_, i) => i & 0xff);
    queue.pushFrame(source, 10, 13); // a short range
    queue.pushFrame(source, 100, 300); // a range to the source's end
    queue.pushFrame(Uint8Array.of(9, 8)); // a whole array
    await nextTurn();
    const expected = [0, 0, 0, 3, 10, 11, 12, 0, 0, 0, 200, ...source.slice(100, 300), 0, 0, 0, 2, 9, 8];
    expect(taken).toEqual(expected.slice(0, 7)); // the kernel took 7 bytes: the rest waits for drain
    while (taken.length < expected.length) queue.onDrain();
    expect(taken).toEqual(expected);
    expect(queue.pendingBytes).toBe(0);
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

  test("flushNow writes what is queued at once, with the ack hook's frame; what follows in the turn goes at its end", async () => {
    const { writes, socket } = countingSocket();
    let acks = 0;
    let queue!: WriteQueue;
    queue = new WriteQueue(socket, () => {
      if (acks++ === 0) queue.pushFrame(Uint8Array.of(1));
    });
    queue.flushNow(); // nothing queued: nothing written, no hook
    expect([writes, acks]).toEqual([[], 0]);
    queue.pushFrame(FRAME);
    queue.flushNow();
    expect(writes).toEqual([20 + 5]); // the frame and the ack, in one write, before the turn ends
    queue.pushFrame(FRAME);
    queue.pushFrame(FRAME);
    expect(writes).toEqual([25]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([25, 40]);
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
  test("envelopes handled one per microtask within a turn are acknowledged by one frame, at the end of that turn", async () => {
    const { writes, acks, emitter } = ackedQueue();
    for (let seq = 1; seq <= 1000; seq++) {
      emitter.settle(seq);
      await Promise.resolve(); // a mailbox handling one message per microtask
      await Promise.resolve();
    }
    expect(acks).toEqual([]);
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
    expect(acks).toEqual([1]);
    await nextTurn();
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
    expect(acks).toEqual([3]);
  });

  test("a held ack goes alone when its hold ends, with nothing to ride on", async () => {
    const { writes, acks, emitter } = ackedQueue();
    emitter.holdFor(5, 1000);
    emitter.settle(1);
    emitter.settle(2);
    await nextTurn();
    expect(acks).toEqual([]);
    await waitFor(() => acks.length > 0, "the held ack", 5000);
    expect(acks).toEqual([2]);
    expect(writes).toEqual([5]);
  });

  test("a peer that lets acks wait gets a lone ack after the hold, or at once when a quarter of the window is owed", async () => {
    const { writes, acks, queue, emitter } = ackedQueue();
    emitter.holdFor(60_000, 8); // prompt after 2 owed
    emitter.settle(1);
    await nextTurn();
    await nextTurn();
    expect(acks).toEqual([]);
    queue.pushFrame(FRAME); // a heartbeat: the held ack rides on it
    await nextTurn();
    expect(acks).toEqual([1]);
    expect(writes).toEqual([20 + 5]);
    emitter.settle(2);
    await nextTurn();
    expect(acks).toEqual([1]);
    emitter.settle(3); // 2 owed
    await nextTurn();
    expect(acks).toEqual([1, 3]);
    expect(writes).toEqual([25, 5]);
  });
});

describe("SendWindow", () => {
  // Random sends, parks, releases and acks against a plain model: order, counts, bytes and
  // each envelope's wait survive the rings' growth, wrap-around and shrinking.
  test("what it holds agrees with a plain queue through growth, wrap-around and shrinking", () => {
    let state = 0x9e3779b9;
    const next = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32);
    const window = new SendWindow(200, 100_000);
    let bursts = 0;
    const sent: Array<{ env: Envelope; bytes: number; since: number }> = [];
    const parked: Array<{ env: Envelope; since: number }> = [];
    let clock = 1_000;
    for (let op = 0; op < 20_000; op++) {
      clock += 1;
      const roll = next();
      if (roll < 0.45) {
        for (let k = 1 + Math.floor(next() * 20); k > 0; k--) {
          const env = createEvent("a", { target_agent: "b" }, { i: op, k }, { ttl: 1_000_000 });
          if (window.hasCredit && parked.length === 0) {
            const bytes = 100 + (op % 7);
            window.assign(env, bytes, clock);
            sent.push({ env, bytes, since: clock });
            continue;
          }
          // Now and then a burst, past the ring's kept size, so it grows and later shrinks again.
          const burst = next() < 0.01 && parked.length < 1_000 ? (bursts++, 9_000) : 1;
          for (let b = 0; b < burst; b++) {
            const e = b === 0 ? env : createEvent("a", { target_agent: "b" }, { i: op, b }, { ttl: 1_000_000 });
            window.defer(e, undefined, clock);
            parked.push({ env: e, since: clock });
          }
        }
      } else if (roll < 0.75) {
        for (let take = Math.floor(next() * 300); take > 0; take--) {
          const env = window.takeDeferred();
          if (env === undefined) {
            expect(parked.length === 0 || !window.hasCredit).toBe(true);
            break;
          }
          const first = parked.shift()!;
          expect(env).toBe(first.env);
          expect(window.takenSince).toBe(first.since);
          window.assign(env, 50, window.takenSince);
          sent.push({ env, bytes: 50, since: first.since });
        }
      } else {
        const n = Math.min(sent.length, Math.floor(next() * 80));
        const released: Envelope[] = [];
        expect(window.ack(window.nextSeq - sent.length - 1 + n, (e) => released.push(e))).toBe(n);
        expect(released).toEqual(sent.splice(0, n).map((s) => s.env));
      }
      expect(window.inFlight).toBe(sent.length);
      expect(window.backlogged).toBe(parked.length);
      expect(window.inFlightBytes).toBe(sent.reduce((sum, s) => sum + s.bytes, 0));
      if (op % 2_000 === 0 || op === 19_999) {
        const pending = window.pending(clock + 10);
        expect(pending).toEqual([...sent, ...parked].map((s) => s.env));
        for (const [k, held] of [...sent, ...parked].entries()) {
          expect(pending[k]!.ttl).toBe(1_000_000 - (clock + 10 - held.since));
          held.env.ttl = 1_000_000; // the model's clock restarts: counted from clock + 10 now
          held.since = clock + 10;
        }
        // The window took its times from then too: asked at the same moment, nothing more is taken off.
        expect(window.pending(clock + 10).every((e) => e.ttl === 1_000_000)).toBe(true);
      }
    }
    expect(bursts).toBeGreaterThanOrEqual(2); // the seeded run has its bursts
    // Drained to the last one (the grown rings start small again), then used once more.
    while (sent.length + parked.length > 0) {
      window.ack(window.nextSeq - 1);
      sent.length = 0;
      for (let env = window.takeDeferred(); env !== undefined; env = window.takeDeferred()) {
        expect(env).toBe(parked.shift()!.env);
        window.assign(env, 10, window.takenSince);
        sent.push({ env, bytes: 10, since: window.takenSince });
      }
    }
    expect([window.inFlight, window.backlogged, window.inFlightBytes]).toEqual([0, 0, 0]);
    const again = Array.from({ length: 300 }, (_, i) => createEvent("a", { target_agent: "b" }, { again: i }));
    for (const env of again) window.hasCredit ? window.assign(env, 1, clock) : window.defer(env, undefined, clock);
    expect(window.pending(clock)).toEqual(again);
  });
});
