import { describe, expect, test } from "bun:test";
import { createEnvelopeCodec, createRecordsCodec } from "../../mesh/codecs.ts";
import { decodeFrameBody, encodeFrame, FrameDecoder } from "../../mesh/frames.ts";
import { createReply, createRequest } from "../../mesh/envelope.ts";
import { seededRandom, type SeededRandom } from "../conformance/seeded-random.ts";

const FIELDS = ["message_id", "message_type", "trace_id", "source_agent", "target_agent", "topic", "capability", "reply_to",
  "correlation_id", "context_id", "priority", "timestamp", "ttl", "headers", "payload", "attempt", "seq"];
const NUMBERS = new Set(["priority", "timestamp", "ttl", "attempt", "seq"]);

function text(random: SeededRandom): string {
  const length = random.pick([0, 1, 5, 26, 31, 32, 100, 255, 256, 300]);
  const alphabet = random.pick(["abcXYZ019-_.#", "é名字🚀 a", "\u0000\u007f\u0080"]);
  // Whole code points: a lone surrogate has no UTF-8 form in any codec.
  return Array.from({ length }, () => random.pick([...alphabet])).join("");
}

function number(random: SeededRandom): number {
  return random.pick([0, 1, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, 1_735_689_600_000, 2 ** 53 - 1, -1, -32, -33, -128, -129, -32_768, -32_769, -(2 ** 31), -(2 ** 31) - 1, -(2 ** 53) + 1, 0.5, -1e-9, 1e300, NaN, Infinity]);
}

/** An envelope-like map: table fields in order, mostly of their types; now and then another key, order or type. */
function randomFrame(random: SeededRandom): Record<string, unknown> {
  const frame: Record<string, unknown> = {};
  for (const field of FIELDS) {
    if (field !== "message_type" && random.int(3) === 0) continue;
    if (field === "message_type") frame[field] = random.pick(["request", "response", "event", "error", "progress", "cancel", "ack", "custom-type"]);
    else if (field === "headers") frame[field] = random.int(5) === 0 ? { n: 1 } : { traceparent: text(random), [text(random)]: text(random) };
    else if (field === "payload") frame[field] = random.pick([{ text: text(random), n: number(random), list: [1, "二", { three: true }] }, {}, { deep: { deeper: [null, text(random)] } }, "not a map", undefined]);
    else frame[field] = NUMBERS.has(field) ? number(random) : random.int(20) === 0 ? 7 : text(random);
  }
  if (random.int(10) === 0) frame[`x_${random.int(3)}`] = text(random);
  if (random.int(10) === 0) return Object.fromEntries(Object.entries(frame).reverse());
  return frame;
}

function roundTrip(values: Record<string, unknown>[]): unknown[] {
  const [encoder, decoder] = [createEnvelopeCodec(), createEnvelopeCodec()];
  const stream = Buffer.concat(values.map((v) => encodeFrame(encoder.encode(v))));
  const out: unknown[] = [];
  new FrameDecoder().push(stream, (buffer, start, end) => out.push(decoder.decode(buffer, start, end)));
  return out;
}

describe("hermes-envelope codec", () => {
  test("an envelope as the mesh builds it goes in form 1 and comes back equal, keys in order", () => {
    const request = { ...createRequest("cli", { target_agent: "echo" }, { text: "你好 👋" }), seq: 1 };
    const reply = { ...createReply("response", request, "echo", { text: "你好 👋" }), seq: 1 };
    const codec = createEnvelopeCodec();
    expect([codec.encode(request)[0], codec.encode(reply)[0]]).toEqual([1, 1]);
    const out = roundTrip([request, reply]);
    expect(out).toEqual([request, reply]);
    expect(out.map((v) => Object.keys(v as object))).toEqual([Object.keys(request), Object.keys(reply)]);
  });

  test("an ack is three bytes or fewer; other control frames and maps that do not fit go whole in form 0", () => {
    const codec = createEnvelopeCodec();
    expect([...codec.encode({ message_type: "ack", seq: 7 })]).toEqual([2, 7]);
    expect(codec.encode({ message_type: "ack", seq: 300 }).length).toBe(4);
    const request = createRequest("cli", { target_agent: "echo" }, {});
    for (const other of [{ message_type: "ping", nonce: 1 }, { seq: 7, message_type: "ack" }, { message_type: "ack", seq: 7, extra: 1 }, { ...request, extra: 1 }, { payload: {}, ...Object.fromEntries(Object.entries(request).filter(([key]) => key !== "payload")) }, { ...request, target_agent: "x".repeat(256) }, { ...request, ttl: "60000" }, { ...request, target_agent: undefined }]) {
      expect(codec.encode(other)[0]).toBe(0);
    }
  });

  test("3,000 random envelope-like maps (every field type and length edge, other keys, orders and types) round-trip exactly, keys in order", () => {
    const random = seededRandom(20_261_207);
    const values = Array.from({ length: 3000 }, () => randomFrame(random));
    const out = roundTrip(values);
    out.forEach((decoded, i) => {
      const ok = Bun.deepEquals(decoded, values[i], true) && Object.keys(decoded as object).join() === Object.keys(values[i]!).join();
      if (!ok) throw new Error(`frame ${i} (seed ${random.seed}) came back as ${Bun.inspect(decoded)}, sent ${Bun.inspect(values[i])}`);
    });
    const forms = new Set(values.map((v) => createEnvelopeCodec().encode(v)[0]));
    expect(forms).toEqual(new Set([0, 1]));
  });

  test("encode() hands back a copy: the next frame, written where the last one was, leaves it as it was", () => {
    const codec = createEnvelopeCodec();
    const first = codec.encode({ ...createRequest("cli", { target_agent: "echo" }, { text: "one" }), seq: 1 });
    const before = Buffer.from(first).toString("hex");
    codec.encode({ ...createRequest("cli", { target_agent: "echo" }, { text: "two" }), seq: 2 });
    expect(Buffer.from(first).toString("hex")).toBe(before);
  });

  test("address fields kept from the frame before are given back only for the same bytes", () => {
    // Names of one length that differ in one byte, a name in and out of the cache, non-ASCII, empty, 31 bytes.
    const names = ["echo", "echa", "echo", "", "é-x", "é-y", "x".repeat(31), "x".repeat(30) + "y", "echo", "échoé", "echo"];
    const values = names.map((name, i) => ({ ...createRequest(name, { target_agent: names[(i + 3) % names.length]! }, {}), seq: i + 1 }));
    expect(roundTrip(values)).toEqual(values);
  });

  test("ids equal to one another, or a byte apart, round-trip exactly", () => {
    const x = "01JGFJJZ000000000000000001", y = "01JGFJJZ000000000000000002", z = "01JGFJJZ00000000000000000Z";
    const frame = (message_id: string, trace_id: string, correlation_id: string, seq: number) =>
      ({ message_id, message_type: "response", trace_id, source_agent: "echo", target_agent: "cli", correlation_id, timestamp: 1, ttl: 1, payload: {}, seq });
    const values = [frame(x, x, x, 1), frame(x, y, x, 2), frame(x, y, y, 3), frame(x, y, z, 4), frame(y, x, "", 5), frame("a", "a", "b", 6), frame("", "", "", 7), frame(z, "é".repeat(13), "é".repeat(13), 8)];
    expect(roundTrip(values)).toEqual(values);
  });

  test("reads its payloads from the same records stream as msgpackr-records would", () => {
    // The payload bytes are exactly the records codec's for the payload alone.
    const payload = { text: "hi", n: 1 };
    const env = createEnvelopeCodec().encode({ ...createRequest("cli", { target_agent: "echo" }, payload), seq: 1 });
    const records = createRecordsCodec().encode(payload);
    expect(Buffer.from(env.subarray(env.length - records.length)).equals(Buffer.from(records))).toBe(true);
  });

  test("every cut of a form-1 body, and every malformed one, throws: no read past the end, no hang", () => {
    const body = createEnvelopeCodec().encode({ ...createRequest("cli", { target_agent: "echo" }, { text: "hi" }, { headers: { a: "b" } }), seq: 1 }).slice();
    for (let cut = 0; cut < body.length; cut++) {
      // A fresh decoder each time (a failed frame leaves a stateful stream unusable).
      expect(() => createEnvelopeCodec().decode(body.subarray(0, cut))).toThrow();
    }
    const malformed = [
      [3], // no such form
      [1, 0xce, 0, 2, 0, 0], // bit 17: no such field
      [1, 2, 6], // message_type code 6
      [1, 2, 0xc3], // message_type true
      [1, 0xcd, 0x20, 2, 0, 0x91], // headers that are not a fixmap
      [1, 0xcd, 0x20, 2, 0, 0x81, 1, 0xa1, 0x61], // a header key that is not a str
      [1, 2, 0, 0xc0], // a byte after the last field of a body without payload
      [2, 1, 0], // a byte after an ack's seq
      [2, 0xdb, 0xff, 0xff, 0xff, 0xff], // a str32 claiming 4 GiB
      [0], // form 0 without its records value
      [1, 0xcd, 0x40, 2, 0], // the payload bit without a payload
    ];
    for (const bytes of malformed) expect(() => createEnvelopeCodec().decode(Uint8Array.from(bytes))).toThrow();
  });

  test("an empty records value is refused from the body alone, whatever bytes follow it in the buffer", () => {
    // The byte after the body would read as a whole value (a positive fixint) if the decoder went on past the end.
    for (const body of [[0], [1, 0xcd, 0x40, 2, 0]]) {
      const buffer = Uint8Array.from([...body, 0x05]);
      expect(() => createEnvelopeCodec().decode(buffer, 0, body.length)).toThrow("records value is missing");
    }
  });

  test("a class instance, a Date or an Error goes whole through the records stream (form 0), as msgpackr writes them", () => {
    class Note { message_type = "event"; payload = {}; }
    const codec = createEnvelopeCodec();
    for (const value of [new Note(), Object.assign(new Date(0), { message_type: "event" }), Object.assign(new Error("x"), { message_type: "event" })]) {
      expect(codec.encode(value)[0]).toBe(0);
    }
  });

  test("a body it cannot read is fatal for the connection (the records stream is lost with it)", () => {
    const refused = decodeFrameBody(createEnvelopeCodec(), Uint8Array.of(1, 2, 6), 0, 3, false);
    expect("error" in refused && refused.fatal).toBe(true);
  });
});
