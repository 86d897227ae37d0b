/**
 * Payload values in both codecs, in process (docs/protocol.md §3, "payload values"): the whole
 * msgpack-test-suite, every extension type code, timestamps with their formats, what is refused
 * and how (code 2 naming the path), the exact reader against msgpackr, the gateway's JSON forms,
 * and msgpackr's own extensions left as they were for its other users.
 */
import { describe, expect, test } from "bun:test";
import { decode as referenceDecode, encode as referenceEncode } from "@msgpack/msgpack";
import { Packr, Unpackr } from "msgpackr";
import { checkPayload, decodeFrameBody } from "../../mesh/frames.ts";
import { createEnvelopeCodec, createPlainCodec, createRecordsCodec } from "../../mesh/codecs.ts";
import { MsgpackExt, MsgpackTimestamp, readStringAt, useOwnStringReader } from "../../mesh/msgpack-values.ts";
import { readExactly } from "../../mesh/exact-reader.ts";
import { HermesError } from "../../mesh/errors.ts";
import { payloadFromJson, payloadToJson } from "../../src/gateway/invoke-forms.ts";
import { seededRandom, type SeededRandom } from "../conformance/seeded-random.ts";
import { hexBytes, splicedPayload, suiteEncodings } from "./msgpack-suite.ts";

const encodings = await suiteEncodings();
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const v = (body: unknown) => (body as { v: unknown }).v;

/** A reference decoding with its safe BigInts as numbers: an int64 0 and a fixint 0 are the same value. */
function numbers(value: unknown): unknown {
  if (typeof value === "bigint") return value >= -(2n ** 53n) && value <= 2n ** 53n ? Number(value) : value;
  if (Array.isArray(value)) return value.map(numbers);
  if (value?.constructor === Object) return Object.fromEntries(Object.entries(value).map(([k, item]) => [k, numbers(item)]));
  return value;
}

/** The code-2 reason `checkPayload` gives for a payload, or undefined when it passes. */
function refusal(payload: unknown): string | undefined {
  try {
    checkPayload(payload);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(HermesError);
    expect((error as HermesError).code).toBe(2);
    return String((error as HermesError).fields.reason);
  }
}

describe("the msgpack-test-suite, every encoding", () => {
  test("decodes to the value hermes-mesh gives it and survives every codec, 233 of 233", () => {
    const plain = createPlainCodec();
    // An envelope as the mesh builds it, so hermes-envelope writes it in its fast form (the payload through its records stream).
    const envelope = { message_id: "01JGFJJZ000000000000000001", message_type: "request", trace_id: "t", source_agent: "cli", target_agent: "echo", reply_to: "cli", timestamp: 1, ttl: 1, payload: {}, seq: 1 };
    let equal = 0;
    for (const { label, raw, expected } of encodings) {
      const decoded = v(plain.decode(splicedPayload(raw)));
      const viaPlain = v(plain.decode(plain.encode({ v: decoded }).slice()));
      const records = [createRecordsCodec(), createRecordsCodec()] as const;
      const viaRecords = v(records[1].decode(records[0].encode({ v: decoded }).slice()));
      const envelopes = [createEnvelopeCodec(), createEnvelopeCodec()] as const;
      const viaEnvelope = (envelopes[1].decode(envelopes[0].encode({ ...envelope, payload: { v: decoded } })) as { payload: unknown }).payload;
      if (![decoded, viaPlain, viaRecords, v(viaEnvelope)].every((value) => Bun.deepEquals(value, expected, true))) {
        throw new Error(`${label}: ${Bun.inspect([decoded, viaPlain, viaRecords, viaEnvelope])}, expected ${Bun.inspect(expected)}`);
      }
      equal++;
    }
    expect(encodings).toHaveLength(233);
    expect(equal).toBe(233);
  });

  test("timestamps and fixext values go back byte for byte; the rest in their smallest form, equal", () => {
    const plain = createPlainCodec();
    const same = encodings.filter(({ raw }) => hex(plain.encode(plain.decode(splicedPayload(raw))).slice()) === hex(splicedPayload(raw)));
    const kept = (label: string) => same.some((s) => s.label === label);
    for (const { label } of encodings.filter((e) => /timestamp|ext\.yaml d[4-8]/.test(e.label))) expect(kept(label)).toBe(true);
    // ext 16/32 of a short value come back as ext 8, ints in the smallest int, float32 as float64: values equal (above).
    expect(kept("60.ext.yaml c8-00-03-07-70-71-72")).toBe(false);
    expect(same).toHaveLength(85);
  });

  test("the independent @msgpack/msgpack reads what the plain codec writes as the suite's values", () => {
    const plain = createPlainCodec();
    for (const { label, raw } of encodings) {
      const ours = plain.encode(plain.decode(splicedPayload(raw))).slice();
      const read = (bytes: Uint8Array) => numbers(referenceDecode(bytes, { useBigInt64: true }));
      expect({ label, value: read(ours) }).toEqual({ label, value: read(splicedPayload(raw)) });
    }
  });
});

describe("extension types", () => {
  test("every type code, at every size class, keeps its type and bytes through both codecs", () => {
    const plain = createPlainCodec();
    let checked = 0;
    for (let type = -128; type < 128; type++) {
      if (type === -1) continue;
      for (const size of [0, 1, 2, 3, 4, 8, 16, 255, 256, 70_000]) {
        const ext = new MsgpackExt(type, Uint8Array.from({ length: size }, (_, i) => (i * 31 + type) & 0xff));
        const records = [createRecordsCodec(), createRecordsCodec()] as const;
        expect(v(plain.decode(plain.encode({ v: ext }).slice()))).toEqual(ext);
        expect(v(records[1].decode(records[0].encode({ v: ext, n: 1 }).slice()))).toEqual(ext);
        checked++;
      }
    }
    expect(checked).toBe(2550);
  });

  test("a foreign fixext 1 or 2 of type 0x72 (msgpackr's record tag) and type 0 are read as extensions", () => {
    const plain = createPlainCodec();
    expect(plain.decode(hexBytes("82-a1-76-d4-72-10-a1-77-91-a1-61"))).toEqual({ v: new MsgpackExt(0x72, new Uint8Array([0x10])), w: ["a"] });
    expect(v(plain.decode(hexBytes("81-a1-76-d5-72-10-11")))).toEqual(new MsgpackExt(0x72, new Uint8Array([0x10, 0x11])));
    expect(v(plain.decode(hexBytes("81-a1-76-d4-00-05")))).toEqual(new MsgpackExt(0, new Uint8Array([5])));
    // d4 00 00 is msgpackr's undefined, so a JavaScript peer's undefined survives; the extension it could also be goes as ext 8.
    expect(plain.decode(hexBytes("81-a1-76-d4-00-00"))).toEqual({ v: undefined });
    expect(hex(plain.encode({ v: undefined }).slice())).toBe("81a176d40000");
    expect(hex(plain.encode({ v: new MsgpackExt(0, new Uint8Array([0])) }).slice())).toBe("81a176c7010000");
    expect(hex(plain.encode({ v: new MsgpackExt(0x72, new Uint8Array([0x10])) }).slice())).toBe("81a176c7017210");
  });

  test("MsgpackExt checks its type and data", () => {
    expect(() => new MsgpackExt(128, new Uint8Array())).toThrow(RangeError);
    expect(() => new MsgpackExt(-1, new Uint8Array(4))).toThrow("use MsgpackTimestamp");
    expect(() => new MsgpackExt(1, [1] as never)).toThrow(TypeError);
    expect(Object.isFrozen(new MsgpackExt(1, new Uint8Array()))).toBe(true);
  });
});

describe("timestamps", () => {
  test("keep seconds and nanoseconds, with a Date at hand", () => {
    const plain = createPlainCodec();
    const cases: Array<[string, number | bigint, number]> = [
      ["d7-ff-a1-dc-d7-c8-5a-4a-f6-a5", 1514862245, 678901234],
      ["d7-ff-00-00-00-04-00-00-00-00", 0, 1],
      ["d7-ff-ee-6b-27-fc-7f-ff-ff-ff", 2147483647, 999999999],
      ["c7-0c-ff-3b-9a-c9-ff-ff-ff-ff-ff-ff-ff-ff-ff", -1, 999999999],
      ["c7-0c-ff-00-00-00-01-7f-ff-ff-ff-ff-ff-ff-ff", 2n ** 63n - 1n, 1],
    ];
    for (const [bytes, seconds, nanoseconds] of cases) {
      const ts = v(plain.decode(splicedPayload(hexBytes(bytes)))) as MsgpackTimestamp;
      expect(ts).toBeInstanceOf(MsgpackTimestamp);
      expect([ts.seconds, ts.nanoseconds]).toEqual([seconds, nanoseconds]);
      expect(hex(plain.encode({ v: ts }).slice())).toBe(hex(splicedPayload(hexBytes(bytes))));
    }
    const at = new MsgpackTimestamp(1514862245, 678901234);
    expect(at.toDate().toISOString()).toBe("2018-01-02T03:04:05.678Z");
    expect(MsgpackTimestamp.fromDate(new Date(-1))).toEqual(new MsgpackTimestamp(-1, 999_000_000));
    expect(new MsgpackTimestamp(5n, 0).seconds).toBe(5);
    expect(at.toJSON()).toEqual({ $timestamp: { seconds: 1514862245, nanoseconds: 678901234 } });
  });

  test("go back in the format they came in when it still holds them, new ones in the smallest", () => {
    const plain = createPlainCodec();
    const wide = hexBytes("c7-0c-ff-00-00-00-00-00-00-00-00-00-00-00-01");
    expect(hex(plain.encode(plain.decode(splicedPayload(wide))).slice())).toBe(hex(splicedPayload(wide)));
    expect(hex(plain.encode({ v: new MsgpackTimestamp(1) }).slice())).toBe("81a176d6ff00000001");
    expect(hex(plain.encode({ v: new MsgpackTimestamp(2 ** 32, 0) }).slice())).toBe("81a176d7ff0000000100000000");
    expect(hex(plain.encode({ v: new MsgpackTimestamp(2 ** 34, 0) }).slice())).toBe("81a176c70cff000000000000000400000000");
  });

  test("refuse impossible values when built", () => {
    expect(() => new MsgpackTimestamp(1, 1e9)).toThrow(RangeError);
    expect(() => new MsgpackTimestamp(1.5)).toThrow(RangeError);
    expect(() => new MsgpackTimestamp(2 ** 60)).toThrow("safe integer or a BigInt");
    expect(() => new MsgpackTimestamp(2n ** 63n)).toThrow("outside int64");
    expect(() => MsgpackTimestamp.fromDate(new Date(Number.NaN))).toThrow(RangeError);
  });
});

describe("integers, floats and binary", () => {
  test("integers past 32 bits anywhere in a payload go out as ints, past 2^53 exactly as BigInt; floats stay floats", () => {
    const plain = createPlainCodec();
    const payload = { a: [5_000_000_000, { b: -(2 ** 53) }], big: 2n ** 64n - 1n, small: -(2n ** 63n), f: 0.5, i: 7, huge: 1e300 };
    const frame = { timestamp: 1_735_689_600_000, payload };
    const bytes = plain.encode(frame).slice();
    expect(payload.a[0]).toBe(5_000_000_000);
    expect(referenceDecode(bytes, { useBigInt64: true })).toEqual({
      timestamp: 1_735_689_600_000n,
      payload: { a: [5_000_000_000n, { b: -(2n ** 53n) }], big: 2n ** 64n - 1n, small: -(2n ** 63n), f: 0.5, i: 7, huge: 1e300 },
    });
    expect(plain.decode(bytes)).toEqual(frame);
    const records = [createRecordsCodec(), createRecordsCodec()] as const;
    expect(records[1].decode(records[0].encode(frame).slice())).toEqual(frame);
  });

  test("bin stays bin and float32 a number of the same value", () => {
    const plain = createPlainCodec();
    expect(v(plain.decode(splicedPayload(hexBytes("c5-00-02-00-ff"))))).toEqual(new Uint8Array([0, 255]));
    expect(hex(plain.encode({ v: new Uint8Array([0, 255]) }).slice())).toBe("81a176c40200ff");
    expect(v(plain.decode(splicedPayload(hexBytes("ca-3f-c0-00-00"))))).toBe(1.5);
  });
});

describe("map keys", () => {
  // {1: "int", -1: "neg", 2^40: "wide", 1.5: "float", true: "t", nil: "n", bin 6b: "bin", "s": "str"}
  const typed = "88-01-a3696e74-ff-a36e6567-cf0000010000000000-a477696465-cb3ff8000000000000-a5666c6f6174-c3-a174-c0-a16e-c4016b-a362696e-a173-a3737472";
  const expected = new Map<unknown, unknown>([[1, "int"], [-1, "neg"], [2 ** 40, "wide"], [1.5, "float"], [true, "t"], [null, "n"], [new Uint8Array([0x6b]), "bin"], ["s", "str"]]);

  test("keys that are not strings keep their type through both codecs: the map arrives as a Map", () => {
    const plain = createPlainCodec();
    const value = v(plain.decode(splicedPayload(hexBytes(typed)))) as Map<unknown, unknown>;
    expect(value).toBeInstanceOf(Map);
    expect([...value.keys()]).toEqual([...expected.keys()]);
    expect([...value.values()]).toEqual([...expected.values()]);
    expect(refusal({ v: value })).toBeUndefined();
    // Written back as a map with the same keys: an @msgpack/msgpack peer reads int, float, bool, nil and bin keys.
    const back = plain.encode({ v: value }).slice();
    const reference = referenceDecode(back, { useBigInt64: true, mapKeyConverter: (key: unknown) => key } as never) as { v: Map<unknown, unknown> };
    expect(hex(back)).toContain(typed.replaceAll("-", "").replace("cf0000010000000000", "d30000010000000000"));
    expect(reference.v).toBeDefined();
    const records = [createRecordsCodec(), createRecordsCodec()] as const;
    const again = v(records[1].decode(records[0].encode({ v: value }).slice())) as Map<unknown, unknown>;
    expect([...again]).toEqual([...expected]);
    // In a nested place, and with string keys only a Map goes as a map and arrives as an object.
    expect(v(plain.decode(plain.encode({ v: [{ m: new Map([[7, "x"]]) }, new Map([["a", 1]])] }).slice()))).toEqual([{ m: new Map([[7, "x"]]) }, { a: 1 }]);
  });

  test("a map with a key __proto__ is a Map holding it, never a prototype, on both codecs and through the JSON forms", () => {
    // { v: { "__proto__": { x: 1 }, y: 2 } }
    const bytes = hexBytes("81-a1-76-82-a95f5f70726f746f5f5f-81-a1-78-01-a1-79-02");
    const plain = createPlainCodec();
    const value = v(plain.decode(bytes)) as Map<string, unknown>;
    expect(value).toBeInstanceOf(Map);
    expect([...value]).toEqual([["__proto__", { x: 1 }], ["y", 2]]);
    expect(({} as { x?: unknown }).x).toBeUndefined();
    expect(hex(plain.encode({ v: value }).slice())).toBe(hex(bytes));
    const records = [createRecordsCodec(), createRecordsCodec()] as const;
    const through = v(records[1].decode(records[0].encode({ v: value }).slice())) as Map<string, unknown>;
    expect([...through]).toEqual([["__proto__", { x: 1 }], ["y", 2]]);
    const fromJson = v(payloadFromJson(JSON.parse('{"v": {"__proto__": {"x": 1}, "y": 2}}'))) as Map<string, unknown>;
    expect([...fromJson]).toEqual([["__proto__", { x: 1 }], ["y", 2]]);
    expect(hex(plain.encode({ v: fromJson }).slice())).toBe(hex(bytes));
    expect(payloadToJson({ v: value })).toEqual({ v: { $entries: [["__proto__", { x: 1 }], ["y", 2]] } });
    // At the top of a payload, which must be a plain map: refused.
    expect(() => payloadFromJson(JSON.parse('{"__proto__": 1}'))).toThrow("a payload may not have a key __proto__ at its top");
  });

  test("string keys that look like numbers or booleans stay strings: the map is a plain object", () => {
    const plain = createPlainCodec();
    const value = { v: { "1": "one", "-2": "minus", true: "yes", null: "nil", "__proto_": "under", "2024-01-01": "date" } };
    expect(plain.decode(plain.encode(value).slice())).toEqual(value);
    expect(v(plain.decode(plain.encode(value).slice()))).not.toBeInstanceOf(Map);
  });

  test("a JS Map over the records codec stays a Map, whatever its keys", () => {
    const records = [createRecordsCodec(), createRecordsCodec()] as const;
    const sent = { v: new Map<unknown, unknown>([["a", 1], [2, "b"]]), o: { plain: true } };
    expect(records[1].decode(records[0].encode(sent).slice())).toEqual(sent);
  });

  test("integers past 32 bits among a Map's keys and values go out as int64", () => {
    const bytes = createPlainCodec().encode({ v: new Map([[5_000_000_000, 6_000_000_000]]) }).slice();
    expect(hex(bytes)).toBe("81a17681d3000000012a05f200d30000000165a0bc00");
  });

  test("the gateway's JSON form: $entries, and back", () => {
    const value = v(createPlainCodec().decode(splicedPayload(hexBytes(typed))));
    const json = payloadToJson({ v: value });
    expect(JSON.parse(JSON.stringify(json))).toEqual({
      v: { $entries: [[1, "int"], [-1, "neg"], [2 ** 40, "wide"], [1.5, "float"], [true, "t"], [null, "n"], [{ $bin: "aw==" }, "bin"], ["s", "str"]] },
    });
    expect(payloadFromJson(JSON.parse(JSON.stringify(json)))).toEqual({ v: value });
    expect(payloadFromJson({ v: { $entries: [["a", 1]] } })).toEqual({ v: { a: 1 } });
    expect(() => payloadFromJson({ v: { $entries: [[1]] } })).toThrow("payload.v: $entries: a list of [key, value] pairs");
  });
});

describe("what cannot be represented is refused with code 2 naming the path", () => {
  test("received: impossible timestamps, non-string map keys, 0xc1, as a value at its path", () => {
    const plain = createPlainCodec();
    const cases: Array<[string, string]> = [
      ["d7-ff-ee-6b-28-00-00-00-00-00", "payload.v: timestamp nanoseconds 1000000000 out of range 0..999999999"],
      ["c7-0c-ff-3b-9a-ca-00-00-00-00-00-00-00-00-00", "payload.v: timestamp nanoseconds 1000000000 out of range 0..999999999"],
      ["c7-05-ff-00-00-00-00-00", "payload.v: a timestamp (extension -1) of 5 bytes: the formats are 4, 8 or 12 bytes"],
      ["81-91-01-02", "payload.v: map key 1 is an array: map keys must be scalars"],
      ["82-a1-61-01-81-a1-62-02-03", "payload.v: map key 2 is a map: map keys must be scalars"],
      ["c1", "payload.v: 0xc1 is never used in MessagePack"],
    ];
    for (const [bytes, reason] of cases) {
      const envelope = { message_id: "01JGFJJZ000000000000000001", payload: plain.decode(splicedPayload(hexBytes(bytes))) };
      expect(refusal(envelope.payload)).toBe(reason);
    }
    expect(refusal({ list: [1, { deep: plain.decode(splicedPayload(hexBytes("c1"))) }] })).toBe("payload.list.1.deep.v: 0xc1 is never used in MessagePack");
  });

  test("a frame whose payload holds such a value still decodes as a map, so its envelope can be answered", () => {
    const plain = createPlainCodec();
    const body = plain.encode({ message_id: "01JGFJJZ000000000000000001", seq: 3, payload: { ok: 1 } }).slice();
    // Splice a map keyed by an array in for payload.ok's value: msgpackr cannot read it, the exact reader can.
    const broken = new Uint8Array([...body.subarray(0, -1), 0x81, 0x91, 0x01, 0x02]);
    const frame = decodeFrameBody(plain, broken, 0, broken.length, false);
    if (!("map" in frame)) throw new Error(`refused: ${frame.error.message}`);
    expect(frame.map.message_id).toBe("01JGFJJZ000000000000000001");
    expect(frame.map.seq).toBe(3);
    expect(refusal(frame.map.payload)).toBe("payload.ok: map key 1 is an array: map keys must be scalars");
  });

  test("sent: a BigInt past 64 bits, a symbol, a function, a Promise", () => {
    expect(refusal({ v: 2n ** 64n })).toBe("payload.v: 18446744073709551616 does not fit in 64 bits (MessagePack ints are int64 or uint64)");
    expect(refusal({ v: -(2n ** 63n) - 1n })).toStartWith("payload.v: -9223372036854775809 does not fit");
    expect(refusal({ v: [Symbol("s")] })).toBe("payload.v.0: a symbol has no MessagePack form");
    expect(refusal({ v: { f() {} } })).toBe("payload.v.f: a function has no MessagePack form");
    expect(refusal({ v: Promise.resolve(1) })).toBe("payload.v: a Promise has no MessagePack form (was an await forgotten?)");
    expect(refusal({ v: [2n ** 64n - 1n, new MsgpackTimestamp(1), new MsgpackExt(1, new Uint8Array()), new Uint8Array(3), new Date(0), null] })).toBeUndefined();
  });
});

/** Random values of every MessagePack kind, as hermes-mesh represents them. */
function randomValue(random: SeededRandom, depth = 0): unknown {
  const kinds = [
    () => null,
    () => random.int(2) === 0,
    () => random.int(1 << 20) - (1 << 19),
    () => random.pick([5_000_000_000, -(2 ** 40), 2 ** 53, 2n ** 63n, 2n ** 64n - 1n, -(2n ** 63n)]),
    () => random.next() * 1e6,
    () => random.pick(["", "a", "名字", "🚀✨", "x".repeat(40), "r\u0072"]),
    () => random.bytes(random.int(40)),
    () => new MsgpackTimestamp(random.int(2 ** 31) - 2 ** 30, random.int(1e9)),
    () => new MsgpackExt(random.pick([-128, -2, 0, 1, 0x72, 127, random.int(128)]), random.bytes(random.pick([1, 2, 3, 4, 8, 16, 20]))),
    () => Array.from({ length: random.int(4) }, () => randomValue(random, depth + 1)),
    () => Object.fromEntries(Array.from({ length: random.int(4) }, (_, i) => [`k${i}${random.pick(["", "é", "r"])}`, randomValue(random, depth + 1)])),
  ];
  return kinds[random.int(depth < 3 ? kinds.length : kinds.length - 2)]!();
}

describe("the exact reader", () => {
  test("reads 3,000 random payloads as msgpackr does, extensions of type 0x72 included", () => {
    const random = seededRandom(0xfade);
    const plain = createPlainCodec();
    const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "auto" as "bigint" });
    for (let i = 0; i < 3000; i++) {
      const value = { v: randomValue(random), n: i };
      const bytes = plain.encode(value).slice();
      const exact = readExactly(bytes);
      expect(exact).toEqual(plain.decode(bytes) as never);
      expect(exact).toEqual(value as never);
      if (!/d472|d572/.test(hex(bytes))) expect(unpackr.unpack(bytes)).toBeDefined();
    }
  });

  test("refuses what is not exactly one value, without allocating what a length claims", () => {
    for (const bytes of ["", "82a16101", "81a16101c0", "dcffff", "dfffffffff", "c6ffffffff", "c9ffffffff01"]) expect(() => readExactly(hexBytes(bytes))).toThrow();
    let deep = "";
    for (let i = 0; i < 600; i++) deep += "91";
    expect(() => readExactly(hexBytes(`${deep}c0`))).toThrow(RangeError);
  });
});

describe("the string reader msgpackr is given", () => {
  const ofLength = (n: number) => "é".repeat(Math.floor(n / 3)) + "a".repeat(n % 3);
  test("reads every string header, ASCII and UTF-8 alike, as the reference decoder does", () => {
    const texts = ["", "a", "hi", "x".repeat(31), "y".repeat(32), "z".repeat(255), "w".repeat(256), "v".repeat(70_000), "ü€😀 é", ofLength(40), "😀".repeat(20_000), "u".repeat(1_200_000)];
    for (const text of texts) {
      const bytes = referenceEncode(text);
      const framed = new Uint8Array(bytes.length + 7); // at an offset, in a bigger buffer, as a frame is
      framed.set(bytes, 5);
      expect(readStringAt(5, 5 + bytes.length, framed.buffer)).toBe(referenceDecode(bytes) as string);
    }
  });

  test("invalid UTF-8 reads as U+FFFD, as TextDecoder and msgpackr's own reader make it", () => {
    const body = Uint8Array.of(0xa4, 0x61, 0xff, 0xc3, 0x62);
    expect(readStringAt(0, body.length, body.buffer)).toBe(new TextDecoder().decode(body.subarray(1)));
    // A long one too (past 32 bytes utf8Slice reads it without the ASCII scan first).
    const long = Uint8Array.of(0xd9, 40, ...new Array(38).fill(0x61), 0xff, 0xc3);
    expect(readStringAt(0, long.length, long.buffer)).toBe(new TextDecoder().decode(long.subarray(2)));
  });

  test("what it does not read, it refuses, and msgpackr reads that itself", () => {
    expect(() => readStringAt(0, 2, Uint8Array.of(0x92, 0x01, 0x02).buffer)).toThrow(); // an array, not a string
    expect(() => readStringAt(0, 3, Uint8Array.of(0xa5, 0x61, 0x62, 0x63).buffer)).toThrow(); // runs past the body's end
    // A body cut inside a string: the frame codec refuses it as msgpackr's own reader would.
    const whole = createRecordsCodec().encode({ text: "a string of more than thirty-two bytes, for the reader" });
    expect(() => createPlainCodec().decode(whole.subarray(0, whole.length - 4))).toThrow();
  });

  test("is msgpackr's reader in this process, and bodies read through it come out whole", () => {
    expect(useOwnStringReader()).toBe(true); // given to the very msgpackr the codecs decode with
    const codec = createRecordsCodec();
    const value = { short: "hi", id: "01JD5X3M8Q7Y6Z5W4V3T2S1R0P", long: "x".repeat(120), mixed: "ü€😀".repeat(30), list: ["ß".repeat(20), "a"] };
    for (let i = 0; i < 3; i++) expect(codec.decode(codec.encode(value))).toEqual(value);
  });
});

describe("msgpackr's other users in the process", () => {
  test("keep msgpackr's own extensions (the durable store's moreTypes rows)", () => {
    const packr = new Packr({ useRecords: false, moreTypes: true });
    const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, moreTypes: true });
    const value = { d: new Date(1234), s: new Set([1, "a"]), e: new TypeError("x"), r: /a+/g, f: new Float32Array([1.5]), u: undefined, big: 2n ** 80n, ext: new MsgpackExt(3, new Uint8Array([1])) };
    const back = unpackr.unpack(packr.pack(value));
    expect(back.d).toEqual(new Date(1234));
    expect(back.s).toEqual(new Set([1, "a"]));
    expect(back.e).toBeInstanceOf(TypeError);
    expect(back.r).toEqual(/a+/g);
    expect(back.f).toEqual(new Float32Array([1.5]));
    expect("u" in back && back.u === undefined).toBe(true);
    expect(back.big).toBe(2n ** 80n);
    expect(back.ext).toEqual(new MsgpackExt(3, new Uint8Array([1])));
    // A frame codec meanwhile reads the same timestamp bytes exactly.
    expect(v(createPlainCodec().decode(packr.pack({ v: new Date(1234) })))).toEqual(new MsgpackTimestamp(1, 234_000_000));
  });
});

describe("the gateway's JSON forms", () => {
  const values = {
    ts: new MsgpackTimestamp(1514862245, 678901234),
    wide: new MsgpackTimestamp(2n ** 62n, 5),
    ext: new MsgpackExt(-128, new Uint8Array([1, 2, 3])),
    big: 2n ** 64n - 1n,
    safe: 42n,
    bin: new Uint8Array([0, 255]),
    literal: { $ext: "just a key" },
    nested: [{ $map: 1 }],
  };
  const forms = {
    ts: { $timestamp: { seconds: 1514862245, nanoseconds: 678901234 } },
    wide: { $timestamp: { seconds: "4611686018427387904", nanoseconds: 5 } },
    ext: { $ext: { type: -128, base64: "AQID" } },
    big: { $bigint: "18446744073709551615" },
    safe: 42,
    bin: { $bin: "AP8=" },
    literal: { $map: { $ext: "just a key" } },
    nested: [{ $map: { $map: 1 } }],
  };

  test("map each value to one form and back", () => {
    expect(payloadToJson(values)).toEqual(forms);
    expect(JSON.parse(JSON.stringify(payloadToJson(values)))).toEqual(forms);
    expect(payloadFromJson(forms)).toEqual({ ...values, safe: 42 });
    const plain = { a: 1, b: ["x", { c: null }] };
    expect(payloadToJson(plain)).toBe(plain);
  });

  test("refuse a malformed form with code 2 naming its path", () => {
    const reasonOf = (json: unknown) => {
      try {
        payloadFromJson(json);
      } catch (error) {
        return String((error as HermesError).fields.reason);
      }
      return "accepted";
    };
    expect(reasonOf({ v: { $timestamp: { seconds: 1, nanoseconds: 1e9 } } })).toStartWith("payload.v: $timestamp: timestamp nanoseconds");
    expect(reasonOf({ v: { $timestamp: { seconds: "x" } } })).toStartWith("payload.v: $timestamp: seconds");
    expect(reasonOf({ v: [{ $ext: { type: 1, base64: "not base64!" } }] })).toBe("payload.v.0: $ext: base64 (standard alphabet, padded)");
    expect(reasonOf({ v: { $ext: { type: -1, base64: "" } } })).toStartWith("payload.v: $ext: extension type -1 is the timestamp");
    expect(reasonOf({ v: { $bigint: "1e3" } })).toBe("payload.v: $bigint: a decimal integer as a string");
    expect(reasonOf({ v: { $bin: 12 } })).toBe("payload.v: $bin: base64 (standard alphabet, padded)");
    expect(reasonOf({ v: { $map: [] } })).toBe("payload.v: $map: a JSON object");
  });

  test("an @msgpack/msgpack peer's values read as the same forms", () => {
    const body = referenceEncode({ v: { b: new Uint8Array([1]), n: 2n ** 60n } }, { useBigInt64: true });
    expect(payloadToJson(createPlainCodec().decode(body))).toEqual({ v: { b: { $bin: "AQ==" }, n: { $bigint: "1152921504606846976" } } });
  });
});
