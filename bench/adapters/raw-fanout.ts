/**
 * Fan-out baseline: this process writes each message to N raw subscribers
 * (bench/fixtures/raw-subscriber-fixture.ts), each its own process on a plain Bun Unix
 * socket. A probe is answered by its arrival time (machine-wide clock); a burst is written in
 * batches of 256 length-prefixed 128-byte frames per subscriber (the rest on drain) and ends
 * when every subscriber's cumulative count reached it. No codec, no envelope: the floor of a
 * publication to N processes.
 */
import { join } from "node:path";
import { spawnFixture, type Fixture } from "../lib/child.ts";
import { monoNow } from "../lib/mono-clock.ts";
import { UNPINNED } from "../lib/placement.ts";
import type { FanoutPeer, FanoutSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/raw-subscriber-fixture.ts");
const BODY = 128;
const FRAME = 4 + BODY;
const BATCH_FRAMES = 256;

function frames(mode: number, count: number, lastFlag = 0): Uint8Array {
  const out = new Uint8Array(count * FRAME).fill(0x78);
  const view = new DataView(out.buffer);
  for (let i = 0; i < count; i++) {
    view.setUint32(i * FRAME, BODY);
    out[i * FRAME + 4] = mode;
    out[i * FRAME + 5] = i === count - 1 ? lastFlag : 0;
  }
  return out;
}

const PROBE = frames(1, 1);
const BATCH = frames(2, BATCH_FRAMES);
const LAST = frames(2, 1, 1);

/** One subscriber's connection: replies parsed, bursts pumped. */
class Subscriber {
  socket!: { write(b: Uint8Array): number; end(): void };
  stamp: ((at: number) => void) | undefined;
  counted: ((count: number) => void) | undefined;
  #reply = new Uint8Array(9);
  #replyLength = 0;
  #toQueue = 0;
  #unsent: Uint8Array | undefined;

  /** Reply bytes: tag 1 + float64, or tag 2 + u32be. */
  data(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length; ) {
      if (this.#replyLength === 0) this.#reply[this.#replyLength++] = chunk[i++]!;
      const need = this.#reply[0] === 1 ? 9 : 5;
      const take = Math.min(need - this.#replyLength, chunk.length - i);
      this.#reply.set(chunk.subarray(i, i + take), this.#replyLength);
      this.#replyLength += take;
      i += take;
      if (this.#replyLength < need) return;
      this.#replyLength = 0;
      const view = new DataView(this.#reply.buffer);
      if (this.#reply[0] === 1) this.stamp?.(view.getFloat64(1));
      else this.counted?.(view.getUint32(1));
    }
  }

  /** Queues a burst of `k` frames, the last one flagged. */
  startBurst(k: number): void {
    this.#toQueue = k;
    this.pump();
  }

  pump(): void {
    for (;;) {
      if (this.#unsent) {
        const written = this.socket.write(this.#unsent);
        if (written < this.#unsent.length) {
          this.#unsent = this.#unsent.subarray(Math.max(0, written));
          return;
        }
        this.#unsent = undefined;
      }
      if (this.#toQueue === 0) return;
      if (this.#toQueue === 1) {
        this.#toQueue = 0;
        this.#unsent = LAST;
      } else {
        const n = Math.min(BATCH_FRAMES, this.#toQueue - 1);
        this.#toQueue -= n;
        this.#unsent = BATCH.subarray(0, n * FRAME);
      }
    }
  }
}

export const rawFanout: FanoutPeer = {
  name: "raw socket",
  async open({ dir, size }): Promise<FanoutSession> {
    const tag = Math.random().toString(36).slice(2, 8);
    const fixtures: Fixture[] = [];
    const subscribers: Subscriber[] = [];
    const close = () => Promise.allSettled(fixtures.map((f) => f[Symbol.asyncDispose]()));
    try {
      const paths = Array.from({ length: size }, (_, i) => join(dir, `raw-sub-${tag}-${i}.sock`));
      fixtures.push(...(await Promise.all(paths.map((path) => spawnFixture(FIXTURE, [path], UNPINNED)))));
      for (const path of paths) {
        const sub = new Subscriber();
        sub.socket = await Bun.connect({ unix: path, socket: { data: (_s, chunk) => sub.data(chunk), drain: () => sub.pump() } });
        subscribers.push(sub);
      }
      const watchdog = <T>(promise: Promise<T>, what: string) =>
        Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`raw fan-out: ${what} timed out`)), 60_000).unref())]);
      return {
        pids: [process.pid, ...fixtures.map((f) => f.pid)],
        async latency(n, count) {
          const subs = subscribers.slice(0, count);
          const delivered = new Array<number>(n);
          const reported = new Array<number>(n);
          for (let i = 0; i < n; i++) {
            let left = count;
            let lastAt = 0;
            const { promise, resolve } = Promise.withResolvers<void>();
            for (const sub of subs) {
              sub.stamp = (at) => {
                sub.stamp = undefined;
                if (at > lastAt) lastAt = at;
                if (--left === 0) resolve();
              };
            }
            const t0 = monoNow();
            for (const sub of subs) sub.socket.write(PROBE);
            await watchdog(promise, "a probe");
            reported[i] = monoNow() - t0;
            delivered[i] = lastAt - t0;
          }
          return { delivered, reported, duplicates: 0, reporters: subs.map((_, i) => `raw-sub-${i}`) };
        },
        async burst(k, count) {
          const subs = subscribers.slice(0, count);
          const counts = new Array<number>(count).fill(0);
          let left = count;
          const { promise, resolve } = Promise.withResolvers<void>();
          subs.forEach((sub, i) => {
            sub.counted = (c) => {
              counts[i] = c;
              if (c === k) {
                sub.counted = undefined;
                if (--left === 0) resolve();
              }
            };
          });
          const t0 = monoNow();
          for (const sub of subs) sub.startBurst(k);
          await watchdog(promise, `a burst of ${k}`);
          return { ns: monoNow() - t0, counts };
        },
        async [Symbol.asyncDispose]() {
          for (const sub of subscribers) sub.socket.end();
          await close();
        },
      };
    } catch (error) {
      await close();
      throw error;
    }
  },
};
