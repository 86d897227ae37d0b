import { describe, expect, test } from "bun:test";
import { decode as referenceDecode, encode as referenceEncode } from "@msgpack/msgpack";
import { encodeFrame, FrameDecoder } from "../../mesh/frames.ts";
import { createCodec, createPlainCodec, createRecordsCodec, negotiateCodec, SUPPORTED_CODECS } from "../../mesh/codecs.ts";
import { isValidEnvelope } from "../../mesh/envelope.ts";
import { seededRandom, type SeededRandom } from "../conformance/seeded-random.ts";

const TEXT = "你好，世界 👋🌍 — Hermes 消息 🚀";
const envelope = {
  message_id: "01JGFJJZ000000000000000001",
  message_type: "request",
  trace_id: "01JGFJJZ000000000000000001",
  source_agent: "cli",
  target_agent: "echo",
  reply_to: "cli",
  timestamp: 1_735_689_600_000,
  ttl: 60_000,
  seq: 1,
  payload: { text: TEXT, "名字": "赫尔墨斯", list: [1, "二", { three: "🥉" }], n: -7, f: 0.5, ok: true, none: null },
};

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  return Buffer.from(haystack).indexOf(Buffer.from(needle)) >= 0;
}

describe("plain codec", () => {
  test("round-trips an envelope and speaks standard MessagePack", () => {
    const codec = createPlainCodec();
    const bytes = codec.encode(envelope).slice();
    expect(codec.decode(bytes)).toEqual(envelope);
    expect(referenceDecode(bytes)).toEqual(envelope);
    expect(createPlainCodec().decode(referenceEncode(envelope))).toEqual(envelope);
  });

  test("keeps Chinese and emoji byte-exact: the raw UTF-8 bytes are on the wire", () => {
    const codec = createPlainCodec();
    const bytes = codec.encode(envelope).slice();
    expect(contains(bytes, new TextEncoder().encode(TEXT))).toBe(true);
    expect(contains(bytes, new TextEncoder().encode("名字"))).toBe(true);
    expect(Buffer.from(bytes).toString("latin1")).not.toContain("\\u");
    expect(codec.encode(codec.decode(bytes)).slice()).toEqual(bytes);
  });

  test("writes a ms timestamp as a MessagePack int64, not a float64", () => {
    const bytes = createPlainCodec().encode({ timestamp: 1_735_689_600_000 }).slice();
    expect(Buffer.from(bytes).toString("hex")).toBe("81a974696d657374616d70d3000001941f297c00");
    // An int type on the wire decodes as a BigInt here; a float64 would decode as a number.
    expect((referenceDecode(bytes, { useBigInt64: true }) as { timestamp: unknown }).timestamp).toBe(1_735_689_600_000n);
  });

  test("leaves 32-bit integers, floats and the caller's object alone", () => {
    const value = { a: 1, b: -5, c: 0xffffffff, d: -0x80000000, e: 1.5, t: 1_735_689_600_000 };
    const bytes = createPlainCodec().encode(value).slice();
    expect(value.t).toBe(1_735_689_600_000);
    expect(referenceDecode(bytes, { useBigInt64: true })).toEqual({ ...value, t: 1_735_689_600_000n });
  });

  test("decodes int64 and uint64 from other encoders as numbers while they are safe, BigInt beyond", () => {
    const codec = createPlainCodec();
    const decoded = codec.decode(referenceEncode(envelope)) as typeof envelope;
    expect(decoded.timestamp).toBe(1_735_689_600_000);
    expect(isValidEnvelope(decoded)).toBe(true);
    // uint64 2^53 + 1 cannot be a safe number: it stays exact as a BigInt, which no envelope check accepts.
    const huge = codec.decode(Buffer.from("81a374746ccf0020000000000001", "hex")) as { ttl: unknown };
    expect(huge.ttl).toBe(2n ** 53n + 1n);
    expect(codec.decode(Buffer.from("81a374746cd3fffffe6be0d68400", "hex"))).toEqual({ ttl: -1_735_689_600_000 });
  });

  test("throws on malformed bytes", () => {
    const codec = createPlainCodec();
    for (const hex of ["", "82a16101", "81a16101c0"]) expect(() => codec.decode(Buffer.from(hex, "hex"))).toThrow();
  });
});

/** A random map: keys drawn from a pool in random number and order, values of every kind, sometimes nested. */
function randomMap(random: SeededRandom, depth = 0): Record<string, unknown> {
  const keys = ["id", "type", "trace", "名字", "emoji😀", "n", "f", "flag", "list", "nested", "ttl", "seq", "payload", "x", "y", "z"];
  const map: Record<string, unknown> = {};
  const count = random.int(7);
  for (let i = 0; i < count; i++) {
    const key = random.pick(keys) + (random.int(4) === 0 ? String(random.int(50)) : "");
    const kind = random.int(depth < 2 ? 8 : 6);
    map[key] = [
      () => random.int(1_000_000) - 500_000,
      () => random.next() * 1000,
      () => random.pick(["", "a", TEXT, "消息", "🚀✨"]),
      () => random.int(2) === 0,
      () => null,
      () => 1_735_689_600_000 + random.int(1000),
      () => [random.int(10), random.pick(["x", "中"]), randomMap(random, depth + 1)],
      () => randomMap(random, depth + 1),
    ][kind]!();
  }
  return map;
}

function shape(value: unknown): string {
  if (typeof value !== "object" || value === null) return typeof value;
  if (Array.isArray(value)) return `[${value.map(shape).join(",")}]`;
  return `{${Object.entries(value).map(([k, v]) => `${k}:${shape(v)}`).join(",")}}`;
}

describe("records codec (sequential)", () => {
  test("round-trips Chinese and emoji with the raw UTF-8 bytes on the wire", () => {
    const [encoder, decoder] = [createRecordsCodec(), createRecordsCodec()];
    const bytes = encoder.encode(envelope).slice();
    expect(contains(bytes, new TextEncoder().encode(TEXT))).toBe(true);
    expect(decoder.decode(bytes)).toEqual(envelope);
  });

  test("2,000 frames of randomly shaped maps decode in order on a separate instance", () => {
    const random = seededRandom(20_240_601);
    const values = Array.from({ length: 2000 }, () => randomMap(random));
    // Far more shapes than the record ids msgpackr cycles through (32), so ids are redefined along the way.
    expect(new Set(values.map(shape)).size).toBeGreaterThan(500);
    const encoder = createRecordsCodec();
    const frames = values.map((v) => encoder.encode(v).slice());
    const decoder = createRecordsCodec();
    frames.forEach((bytes, i) => {
      const decoded = decoder.decode(bytes);
      if (!Bun.deepEquals(decoded, values[i])) throw new Error(`frame ${i} (seed ${random.seed}) decoded wrongly`);
    });
    expect(frames).toHaveLength(2000);
  });

  test("the same stream survives framing and arbitrary chunking", () => {
    const random = seededRandom(7);
    const values = Array.from({ length: 500 }, () => randomMap(random));
    const encoder = createRecordsCodec();
    const stream = Buffer.concat(values.map((v) => encodeFrame(encoder.encode(v))));
    const decoder = createRecordsCodec();
    const frames = new FrameDecoder();
    const out: unknown[] = [];
    for (let at = 0; at < stream.length; ) {
      const size = 1 + random.int(300);
      frames.push(stream.subarray(at, at + size), (buf, s, e) => out.push(decoder.decode(buf, s, e)));
      at += size;
    }
    expect(out).toEqual(values);
  });
});

describe("negotiateCodec", () => {
  test("picks the first codec in the acceptor's list that the connector also offers", () => {
    expect(negotiateCodec(["msgpackr-records", "msgpack"], ["msgpack", "msgpackr-records"])).toBe("msgpackr-records");
    expect(negotiateCodec(["msgpack", "msgpackr-records"], ["msgpackr-records", "msgpack"])).toBe("msgpack");
  });

  test("skips codecs this implementation does not support and falls back to msgpack", () => {
    expect(negotiateCodec(["zstd-cbor", "msgpackr-records", "msgpack"], ["zstd-cbor", "msgpackr-records", "msgpack"])).toBe("msgpackr-records");
    expect(negotiateCodec(["msgpackr-records", "msgpack"], ["msgpack"])).toBe("msgpack");
    expect(negotiateCodec(["msgpack"], ["msgpackr-records", "msgpack"])).toBe("msgpack");
    expect(negotiateCodec(["zstd-cbor"], ["zstd-cbor"])).toBe("msgpack");
  });

  test("offers hermes-envelope first, then records, msgpack always, and builds codecs by name", () => {
    expect(SUPPORTED_CODECS).toEqual(["hermes-envelope", "msgpackr-records", "msgpack"]);
    expect(createCodec("hermes-envelope").name).toBe("hermes-envelope");
    expect(createCodec("msgpackr-records").name).toBe("msgpackr-records");
    expect(createCodec("msgpack").name).toBe("msgpack");
    expect(createCodec("something-else").name).toBe("msgpack");
  });
});

describe("what a sender keeps on an envelope stays off the wire", () => {
  // A handler may mark an object it sends with symbols: never encoded. (The mesh keeps nothing of
  // its own on an envelope: test/mesh/connection.test.ts.)
  for (const make of [createPlainCodec, createRecordsCodec]) {
    test(`${make().name}: symbol-keyed properties are not encoded`, () => {
      const marked = { ...envelope, [Symbol("held-since")]: 123, [Symbol("held-ttl")]: 456 };
      expect(Buffer.from(make().encode(marked))).toEqual(Buffer.from(make().encode(envelope)));
      expect(make().decode(make().encode(marked).slice())).toEqual(envelope);
    });
  }
});

describe("encodeRange: the write path's encoding, in place", () => {
  for (const make of [createPlainCodec, createRecordsCodec]) {
    test(`${make().name}: the same bytes as encode, each body at the same place, a stream the decoder reads`, () => {
      const viaEncode = make();
      const viaRange = make();
      const decoder = make();
      const values = Array.from({ length: 300 }, (_, i) => ({ ...envelope, seq: i + 1, payload: { n: i, text: "x".repeat(i) } }));
      const expected = values.map((value) => Buffer.from(viaEncode.encode(value)));
      const starts = new Set<number>();
      values.forEach((value, i) => {
        const range = viaRange.encodeRange(value);
        const body = range.bytes.slice(range.start, range.end);
        expect(Buffer.from(body)).toEqual(expected[i]!);
        // The records decoder learns each shape once, in order: the bodies form one stream.
        expect(decoder.decode(body)).toEqual(value);
        starts.add(range.start);
      });
      // 300 bodies of up to 450 bytes appended would pass 64 KiB; written in place they do not move.
      expect(starts.size).toBe(1);
    });
  }

  test("a body encoded before stays intact after an encodeRange (views that encode returned stay valid)", () => {
    const codec = createPlainCodec();
    const kept = codec.encode({ ...envelope, payload: { keep: "me" } });
    const copy = Buffer.from(kept);
    for (let i = 0; i < 10; i++) codec.encodeRange({ ...envelope, payload: { other: i } });
    expect(Buffer.from(kept)).toEqual(copy);
  });
});
