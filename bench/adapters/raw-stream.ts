/**
 * Stream baseline: length-prefixed 128-byte frames written in batches to a plain Bun Unix
 * socket; the child (bench/fixtures/raw-sink-fixture.ts) counts frames and answers each read
 * with the cumulative count, so a burst ends, as hermes' does, when the receiver has
 * acknowledged every frame.
 */
import { join } from "node:path";
import { spawnFixture } from "../lib/child.ts";
import { RAW_128 } from "../lib/payload.ts";
import type { PeerEnv, StreamPeer, StreamSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/raw-sink-fixture.ts");
const FRAME_BYTES = 4 + RAW_128.length;
/** Frames per write: 256 x 132 B = 33 KiB, about what hermes' write queue coalesces per tick. */
const BATCH_FRAMES = 256;

function frameBatch(): Uint8Array {
  const batch = new Uint8Array(BATCH_FRAMES * FRAME_BYTES);
  const view = new DataView(batch.buffer);
  for (let i = 0; i < BATCH_FRAMES; i++) {
    view.setUint32(i * FRAME_BYTES, RAW_128.length);
    batch.set(RAW_128, i * FRAME_BYTES + 4);
  }
  return batch;
}

export const rawStream: StreamPeer = {
  name: "raw socket",
  async open({ dir, placement }: PeerEnv): Promise<StreamSession> {
    const path = join(dir, `raw-sink-cpu${placement.childCpu ?? "all"}.sock`);
    const fixture = await spawnFixture(FIXTURE, [path], placement);
    const batch = frameBatch();
    let acked = 0; // cumulative count from the receiver
    let ackBytes = 0;
    let ackValue = 0;
    let target = 0; // acked count that ends the burst
    let toQueue = 0; // frames of this burst not yet handed to write
    let unsent: Uint8Array | undefined; // bytes the kernel has not taken yet
    let done: { resolve: () => void; reject: (e: Error) => void } | undefined;

    const pump = (socket: { write(b: Uint8Array): number }) => {
      for (;;) {
        if (unsent) {
          const written = socket.write(unsent);
          if (written < unsent.length) {
            unsent = unsent.subarray(Math.max(0, written));
            return; // resumed in drain
          }
          unsent = undefined;
        }
        if (toQueue === 0) return;
        const frames = Math.min(BATCH_FRAMES, toQueue);
        toQueue -= frames;
        unsent = batch.subarray(0, frames * FRAME_BYTES);
      }
    };
    try {
      const socket = await Bun.connect({
        unix: path,
        socket: {
          data(_socket, chunk) {
            for (const byte of chunk) {
              ackValue = ((ackValue << 8) | byte) >>> 0;
              if (++ackBytes === 4) {
                acked = ackValue;
                ackBytes = ackValue = 0;
              }
            }
            if (done && acked >= target) {
              const { resolve } = done;
              done = undefined;
              resolve();
            }
          },
          drain: pump,
          close() {
            done?.reject(new Error("raw sink closed the socket"));
          },
        },
      });
      return {
        frameBytes: FRAME_BYTES,
        send(n) {
          const { promise, resolve, reject } = Promise.withResolvers<void>();
          done = { resolve, reject };
          target = acked + n;
          toQueue = n;
          pump(socket);
          return promise;
        },
        async received() {
          return Number(await fixture.ask("count"));
        },
        async [Symbol.asyncDispose]() {
          socket.end();
          await fixture[Symbol.asyncDispose]();
        },
      };
    } catch (error) {
      await fixture[Symbol.asyncDispose]();
      throw error;
    }
  },
};
