/**
 * The raw stream's sender: length-prefixed 128-byte frames written in batches to a plain Bun
 * socket (what the kernel does not take is resumed on drain), the receiver answering each
 * read with its cumulative frame count as a u32be (bench/fixtures/raw-sink-fixture.ts). A
 * burst ends when that count reaches what was sent. Used by the stream scenario's raw
 * baseline (in the harness) and by the fan-in scenario's raw senders (each its own process).
 */
import { RAW_128 } from "./payload.ts";

export const RAW_FRAME_BYTES = 4 + RAW_128.length;
/** Frames per write: 256 x 132 B = 33 KiB, about what hermes' write queue coalesces per tick. */
const BATCH_FRAMES = 256;

function frameBatch(): Uint8Array {
  const batch = new Uint8Array(BATCH_FRAMES * RAW_FRAME_BYTES);
  const view = new DataView(batch.buffer);
  for (let i = 0; i < BATCH_FRAMES; i++) {
    view.setUint32(i * RAW_FRAME_BYTES, RAW_128.length);
    batch.set(RAW_128, i * RAW_FRAME_BYTES + 4);
  }
  return batch;
}

/**
 * @example
 * const sender = new RawFrameSender();
 * const socket = await Bun.connect({ unix: path, socket: sender.handlers() });
 * sender.attach(socket);
 * await sender.send(100_000);
 */
export class RawFrameSender {
  #batch = frameBatch();
  #socket: { write(b: Uint8Array): number } | undefined;
  #acked = 0; // cumulative count from the receiver
  #ackBytes = 0;
  #ackValue = 0;
  #target = 0; // acked count that ends the burst
  #toQueue = 0; // frames of this burst not yet handed to write
  #unsent: Uint8Array | undefined; // bytes the kernel has not taken yet
  #done: { resolve: () => void; reject: (e: Error) => void } | undefined;

  /** The socket handlers to connect with. */
  handlers() {
    return {
      data: (_socket: unknown, chunk: Uint8Array) => this.#data(chunk),
      drain: () => this.#pump(),
      close: () => this.#done?.reject(new Error("raw sink closed the socket")),
    };
  }

  attach(socket: { write(b: Uint8Array): number }): void {
    this.#socket = socket;
  }

  /** Sends `n` frames; resolves once the receiver counted every one. */
  send(n: number): Promise<void> {
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    this.#done = { resolve, reject };
    this.#target = this.#acked + n;
    this.#toQueue = n;
    this.#pump();
    return promise;
  }

  #data(chunk: Uint8Array): void {
    for (const byte of chunk) {
      this.#ackValue = ((this.#ackValue << 8) | byte) >>> 0;
      if (++this.#ackBytes === 4) {
        this.#acked = this.#ackValue;
        this.#ackBytes = this.#ackValue = 0;
      }
    }
    if (this.#done && this.#acked >= this.#target) {
      const { resolve } = this.#done;
      this.#done = undefined;
      resolve();
    }
  }

  #pump(): void {
    const socket = this.#socket;
    if (!socket) return;
    for (;;) {
      if (this.#unsent) {
        const written = socket.write(this.#unsent);
        if (written < this.#unsent.length) {
          this.#unsent = this.#unsent.subarray(Math.max(0, written));
          return; // resumed in drain
        }
        this.#unsent = undefined;
      }
      if (this.#toQueue === 0) return;
      const frames = Math.min(BATCH_FRAMES, this.#toQueue);
      this.#toQueue -= frames;
      this.#unsent = this.#batch.subarray(0, frames * RAW_FRAME_BYTES);
    }
  }
}
