import { describe, expect, test } from "bun:test";
import { DEFAULT_MAX_FRAME_BYTES, FrameDecoder, encodeFrame } from "../../mesh/frames.ts";
import { HermesError } from "../../mesh/errors.ts";

const bodies = [new Uint8Array([0x80]), new TextEncoder().encode("a somewhat longer frame body, 你好 🚀"), Uint8Array.from({ length: 300 }, (_, i) => i & 0xff)];
const stream = Buffer.concat(bodies.map(encodeFrame));

/** Feeds `chunks` and returns copies of the frame bodies, since bodies may be views of a chunk. */
function feed(decoder: FrameDecoder, chunks: Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const chunk of chunks) decoder.push(chunk, (buf, s, e) => out.push(buf.slice(s, e)));
  return out;
}

function thrown(fn: () => void): HermesError {
  try {
    fn();
  } catch (error) {
    if (error instanceof HermesError) return error;
    throw error;
  }
  throw new Error("expected a HermesError");
}

describe("FrameDecoder", () => {
  test("decodes frames split at every possible byte boundary", () => {
    for (let i = 0; i <= stream.length; i++) {
      const decoder = new FrameDecoder();
      const out = feed(decoder, [stream.subarray(0, i), stream.subarray(i)]);
      if (!Bun.deepEquals(out, bodies)) throw new Error(`wrong frames when split at byte ${i}`);
      expect(decoder.bufferedBytes).toBe(0);
    }
  });

  test("decodes frames split at every pair of byte boundaries", () => {
    const short = Buffer.concat([encodeFrame(bodies[0]!), encodeFrame(bodies[1]!)]);
    for (let i = 0; i <= short.length; i++) {
      for (let j = i; j <= short.length; j++) {
        const out = feed(new FrameDecoder(), [short.subarray(0, i), short.subarray(i, j), short.subarray(j)]);
        if (!Bun.deepEquals(out, bodies.slice(0, 2))) throw new Error(`wrong frames when split at bytes ${i} and ${j}`);
      }
    }
    expect(short.length).toBeGreaterThan(8);
  });

  test("decodes a slow feed, one byte at a time", () => {
    const decoder = new FrameDecoder();
    const out = feed(decoder, Array.from(stream, (b) => new Uint8Array([b])));
    expect(out).toEqual(bodies);
    expect(decoder.bufferedBytes).toBe(0);
  });

  test("counts a started frame as buffered from its first byte until it completes", () => {
    const decoder = new FrameDecoder();
    const frame = encodeFrame(bodies[1]!);
    for (let i = 0; i < frame.length - 1; i++) {
      feed(decoder, [frame.subarray(i, i + 1)]);
      expect(decoder.bufferedBytes).toBeGreaterThan(0);
    }
    expect(feed(decoder, [frame.subarray(frame.length - 1)])).toEqual([bodies[1]!]);
    expect(decoder.bufferedBytes).toBe(0);
  });

  test("decodes many frames in one chunk, in order", () => {
    const many = Array.from({ length: 1000 }, (_, i) => new TextEncoder().encode(`frame ${i}`));
    const out = feed(new FrameDecoder(), [Buffer.concat(many.map(encodeFrame))]);
    expect(out).toEqual(many);
  });

  test("a claimed length of 0xFFFFFFFF throws code 6 before any body arrives, without allocating", () => {
    const decoder = new FrameDecoder();
    const error = thrown(() => feed(decoder, [new Uint8Array([0xff, 0xff, 0xff, 0xff, 1, 2, 3])]));
    expect(error.code).toBe(6);
    expect(error.fields).toMatchObject({ resource: "frame_bytes", used: 0xffffffff, limit: DEFAULT_MAX_FRAME_BYTES });
    expect(decoder.bufferedBytes).toBeLessThan(16);
  });

  test("a huge length split across chunks throws code 6 as soon as the header is whole", () => {
    const decoder = new FrameDecoder();
    feed(decoder, [new Uint8Array([0xff, 0xff])]);
    expect(decoder.bufferedBytes).toBe(2);
    expect(thrown(() => feed(decoder, [new Uint8Array([0xff, 0xff])])).code).toBe(6);
    expect(decoder.bufferedBytes).toBeLessThan(16);
  });

  test("a frame at the limit is held only as far as it has arrived", () => {
    const decoder = new FrameDecoder(1024);
    const header = new Uint8Array([0, 0, 4, 0]);
    feed(decoder, [header, new Uint8Array(10)]);
    expect(decoder.bufferedBytes).toBeLessThan(64);
    expect(thrown(() => feed(new FrameDecoder(1024), [new Uint8Array([0, 0, 4, 1])])).code).toBe(6);
  });

  test("a zero length throws code 2", () => {
    const error = thrown(() => feed(new FrameDecoder(), [new Uint8Array([0, 0, 0, 0])]));
    expect(error.code).toBe(2);
    expect(error.fields.reason).toBe("zero-length frame");
    expect(thrown(() => feed(new FrameDecoder(), [encodeFrame(bodies[0]!), new Uint8Array([0, 0]), new Uint8Array([0, 0])])).code).toBe(2);
  });

  test("reset drops a partial frame", () => {
    const decoder = new FrameDecoder();
    feed(decoder, [stream.subarray(0, 7)]);
    expect(decoder.bufferedBytes).toBeGreaterThan(0);
    decoder.reset();
    expect(decoder.bufferedBytes).toBe(0);
    expect(feed(decoder, [stream])).toEqual(bodies);
  });
});
