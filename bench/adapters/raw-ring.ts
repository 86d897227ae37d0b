/**
 * Chain baseline: a ring of raw relays (bench/fixtures/raw-relay-fixture.ts), each its own
 * process on a plain Bun Unix socket, with this process as the ring's start: it writes a
 * 128-byte message (byte 0 the hops left, byte 1 the hops made) to relay 1 and times it until
 * it comes back from the last relay of the trip. No framing, no codec: the floor of a chain.
 */
import { join } from "node:path";
import { spawnFixture, type Fixture } from "../lib/child.ts";
import { RawWriter } from "../lib/raw-writer.ts";
import { UNPINNED } from "../lib/placement.ts";
import type { RingPeer, RingSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/raw-relay-fixture.ts");
const MESSAGE_BYTES = 128;

export const rawRing: RingPeer = {
  name: "raw ring",
  async open({ dir, size }): Promise<RingSession> {
    const tag = Math.random().toString(36).slice(2, 8);
    const pathOf = (i: number) => join(dir, `raw-ring-${tag}-${i}.sock`);
    const relays: Fixture[] = [];
    let filled = 0;
    const incoming = new Uint8Array(MESSAGE_BYTES);
    let arrived: ((hops: number) => void) | undefined;
    let failed: ((error: Error) => void) | undefined;
    const start = Bun.listen({
      unix: pathOf(0),
      socket: {
        data(_socket, chunk) {
          let i = 0;
          while (i < chunk.length) {
            const take = Math.min(MESSAGE_BYTES - filled, chunk.length - i);
            incoming.set(chunk.subarray(i, i + take), filled);
            filled += take;
            i += take;
            if (filled === MESSAGE_BYTES) {
              filled = 0;
              const resolve = arrived;
              arrived = failed = undefined;
              resolve?.(incoming[1]!);
            }
          }
        },
      },
    });
    const close = async () => {
      await Promise.allSettled(relays.map((r) => r[Symbol.asyncDispose]()));
      start.stop(true);
    };
    try {
      // Relays inherit this process's cpus; the scenario moves them.
      relays.push(...(await Promise.all(Array.from({ length: size - 1 }, (_, k) =>
        spawnFixture(FIXTURE, [pathOf(k + 1), k + 2 < size ? pathOf(k + 2) : "-", pathOf(0)], UNPINNED)))));
      for (const relay of relays) await relay.ask("link");
      let writer: RawWriter | undefined;
      const socket = await Bun.connect({ unix: pathOf(1), socket: { data() {}, drain: () => writer?.drain() } });
      writer = new RawWriter(socket);
      const message = new Uint8Array(MESSAGE_BYTES).fill(0x78);
      return {
        pids: [process.pid, ...relays.map((r) => r.pid)],
        async trips(n, hops) {
          if (!(hops >= 2 && hops <= size)) throw new RangeError(`raw ring of ${size}: cannot make a trip of ${hops} hops`);
          const samples = new Array<number>(n);
          const hopsSeen = new Array<number>(n);
          // One watchdog per batch (a timer per trip would be part of what is timed).
          const watchdog = setTimeout(() => failed?.(new Error(`raw ring: a trip of ${hops} hops did not come back`)), 10_000 + n * 10);
          try {
            for (let i = 0; i < n; i++) {
              const back = new Promise<number>((resolve, reject) => ((arrived = resolve), (failed = reject)));
              const t = Bun.nanoseconds();
              message[0] = hops - 1;
              message[1] = 1;
              writer.write(message);
              hopsSeen[i] = await back;
              samples[i] = Bun.nanoseconds() - t;
            }
          } finally {
            clearTimeout(watchdog);
          }
          return { samples, hopsSeen };
        },
        async forwarded() {
          return [0, ...(await Promise.all(relays.map(async (r) => Number(await r.ask("forwarded")))))];
        },
        async [Symbol.asyncDispose]() {
          socket.end();
          await close();
        },
      };
    } catch (error) {
      await close();
      throw error;
    }
  },
};
