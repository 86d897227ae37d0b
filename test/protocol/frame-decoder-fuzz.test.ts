import { expect, test } from "bun:test";
import { FrameDecoder, encodeFrame } from "../../mesh/frames.ts";
import { createPlainCodec } from "../../mesh/codecs.ts";
import { isPlainMap, isValidEnvelope, parseEnvelope } from "../../mesh/envelope.ts";
import { HermesError } from "../../mesh/errors.ts";
import { seededRandom, type SeededRandom } from "../conformance/seeded-random.ts";

const MAX_FRAME = 64 * 1024;
const codec = createPlainCodec();

/** A frame that is valid, damaged, cut short, or claims a length it never delivers. */
function chunk(random: SeededRandom): Uint8Array {
  // Fixed ids and times keep a seed's run identical.
  const env = {
    message_id: `01JGFJJZ00${String(random.int(1e9)).padStart(16, "0")}`, message_type: "request", trace_id: "t-1",
    source_agent: "fuzz", target_agent: "echo", reply_to: "fuzz", timestamp: 1_735_689_600_000, ttl: 60_000,
    seq: 1 + random.int(100), payload: { text: "你好 🚀", n: random.int(1000) },
  };
  const good = encodeFrame(codec.encode(random.int(4) === 0 ? { message_type: "ping", nonce: random.int(9) } : env));
  switch (random.int(6)) {
    case 0:
      return random.bytes(random.int(64));
    case 1:
      return good;
    case 2: {
      const flipped = good.slice();
      for (let i = 0; i < 1 + random.int(4); i++) flipped[4 + random.int(flipped.length - 4)]! ^= 1 << random.int(8);
      return flipped;
    }
    case 3:
      return good.subarray(0, random.int(good.length));
    case 4: {
      const header = new Uint8Array(4 + random.int(32));
      new DataView(header.buffer).setUint32(0, random.int(2) === 0 ? random.int(MAX_FRAME * 2) : random.int(2 ** 32), false);
      header.set(random.bytes(header.length - 4), 4);
      return header;
    }
    default:
      return Buffer.concat([good, good.subarray(0, random.int(good.length)), random.bytes(random.int(8))]);
  }
}

test("2,000 random chunks: push throws only HermesError, decoding never escapes, memory stays bounded", () => {
  const random = seededRandom(0xf022);
  Bun.gc(true);
  const heapBefore = process.memoryUsage().heapUsed;
  let decoder = new FrameDecoder(MAX_FRAME);
  const seen = { frames: 0, undecodable: 0, envelopes: 0, rejectedMaps: 0, framingErrors: 0 };
  const onFrame = (buffer: Uint8Array, start: number, end: number) => {
    seen.frames++;
    let value: unknown;
    try {
      value = codec.decode(buffer, start, end);
    } catch {
      seen.undecodable++;
      return;
    }
    // The checks themselves must never throw on anything a decoder can produce.
    if (isValidEnvelope(value)) seen.envelopes++;
    else if (isPlainMap(value) && value.message_type !== "ping") {
      expect(() => parseEnvelope(value)).toThrow(HermesError);
      seen.rejectedMaps++;
    }
  };
  for (let i = 0; i < 2000; i++) {
    // Now and then a fresh connection, so later good frames start aligned.
    if (random.int(8) === 0) decoder = new FrameDecoder(MAX_FRAME);
    try {
      decoder.push(chunk(random), onFrame);
    } catch (error) {
      if (!(error instanceof HermesError) || (error.code !== 2 && error.code !== 6)) throw new Error(`chunk ${i} (seed ${random.seed}): ${error}`);
      seen.framingErrors++;
      decoder = new FrameDecoder(MAX_FRAME); // the connection closes
    }
    if (decoder.bufferedBytes > MAX_FRAME + 4) throw new Error(`chunk ${i}: ${decoder.bufferedBytes} bytes buffered`);
  }
  Bun.gc(true);
  expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
  // Every path was taken.
  expect(seen.envelopes).toBeGreaterThan(50);
  expect(seen.undecodable).toBeGreaterThan(10);
  expect(seen.rejectedMaps).toBeGreaterThan(10);
  expect(seen.framingErrors).toBeGreaterThan(50);
});
