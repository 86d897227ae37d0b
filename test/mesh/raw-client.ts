/** A bare socket client for feeding a listener arbitrary bytes and reading back what it says. */
import { createPlainCodec } from "../../src/protocol/codec.ts";
import { encodeFrame } from "../../src/protocol/frame-encoder.ts";
import { FrameDecoder } from "../../src/protocol/frame-decoder.ts";

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
  return {
    frames,
    write: (bytes) => void socket.write(bytes),
    sendFrame: (value) => void socket.write(encodeFrame(codec.encode(value))),
    closed: done.promise,
    isClosed: () => closed,
    end: () => socket.end(),
  };
}
