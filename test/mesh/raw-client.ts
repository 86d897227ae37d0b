/** A bare socket client for feeding a listener arbitrary bytes and reading back what it says. */
import { encodeFrame, FrameDecoder } from "../../mesh/frames.ts";
import { createPlainCodec } from "../../mesh/codecs.ts";

export interface RawClient {
  /** Frames received so far, decoded as plain msgpack. */
  frames: any[];
  write(bytes: Uint8Array): void;
  /** Writes one plain-msgpack frame holding `value`. */
  sendFrame(value: unknown): void;
  closed: Promise<void>;
  isClosed(): boolean;
  end(): void;
}

const codec = createPlainCodec();

export const HELLO = { message_type: "hello", protocol: 1, node: "raw", codecs: ["msgpack"], window: 64 };

export async function rawConnect(path: string): Promise<RawClient> {
  const frames: any[] = [];
  const decoder = new FrameDecoder(64 * 1024 * 1024);
  let closed = false;
  let drain = () => {};
  const done = Promise.withResolvers<void>();
  const socket = await Bun.connect({
    unix: path,
    socket: {
      data(_s, chunk) {
        try {
          decoder.push(chunk, (buf, s, e) => frames.push(codec.decode(buf, s, e)));
        } catch {
          // The test only cares about frames that decode.
        }
      },
      drain() {
        drain();
      },
      close() {
        closed = true;
        done.resolve();
      },
      error() {
        closed = true;
        done.resolve();
      },
    },
  });
  // Bun's socket.write takes what the kernel accepts and buffers nothing: keep the rest for drain.
  const unwritten: Uint8Array[] = [];
  let endWhenFlushed = false;
  const flush = () => {
    while (unwritten.length > 0 && !closed) {
      const chunk = unwritten[0]!;
      const n = socket.write(chunk);
      if (n < chunk.length) {
        unwritten[0] = chunk.subarray(Math.max(n, 0));
        return;
      }
      unwritten.shift();
    }
    if (endWhenFlushed) socket.end();
  };
  drain = flush;
  const write = (bytes: Uint8Array) => {
    unwritten.push(bytes);
    if (unwritten.length === 1) flush();
  };
  return {
    frames,
    write,
    sendFrame: (value) => write(encodeFrame(codec.encode(value))),
    closed: done.promise,
    isClosed: () => closed,
    /** Ends the stream once everything written so far has gone out. */
    end: () => {
      endWhenFlushed = true;
      if (unwritten.length === 0) socket.end();
    },
  };
}
