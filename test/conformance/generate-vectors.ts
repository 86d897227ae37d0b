/**
 * Builds docs/conformance/vectors.json. Run by hand after changing a case:
 *
 *   node_modules/.bin/bun test/conformance/generate-vectors.ts
 *
 * Bodies are written by a plain msgpackr encoder of its own (records off), not by the
 * project's codec, and checked with @msgpack/msgpack before anything is written.
 * vectors.test.ts fails when the file and this script disagree.
 */
import { Packr } from "msgpackr";
import { referenceProblems } from "./reference-check.ts";
import { bytesToHex, type FrameType, type Stage, type Vector, type VectorFile } from "./vector-format.ts";

export const VECTORS_PATH = new URL("../../docs/conformance/vectors.json", import.meta.url).pathname;
const MAX_FRAME_BYTES = 16 * 1024 * 1024;

const packr = new Packr({ useRecords: false, variableMapSize: true });

/** Bytes written as they are: how the payload values JSON lacks get into a body here (see body()). */
class RawBytes {
  constructor(readonly bytes: Uint8Array) {}
}

/** An extension value in its smallest form (MessagePack spec): fixext 1/2/4/8/16, else ext 8/16/32. */
function extension(type: number, data: Uint8Array): Uint8Array {
  const n = data.length;
  const fixed = ({ 1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8 } as Record<number, number>)[n];
  const header = fixed !== undefined ? [fixed] : n < 0x100 ? [0xc7, n] : n < 0x10000 ? [0xc8, n >> 8, n & 0xff] : [0xc9, n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
  return new Uint8Array([...header, type & 0xff, ...data]);
}

/** A timestamp in the smallest of the spec's three formats that holds it. */
function timestamp(seconds: number, nanoseconds: number): Uint8Array {
  const data = new DataView(new ArrayBuffer(nanoseconds === 0 && seconds >= 0 && seconds < 2 ** 32 ? 4 : seconds >= 0 && seconds < 2 ** 34 ? 8 : 12));
  if (data.byteLength === 4) data.setUint32(0, seconds);
  else if (data.byteLength === 8) {
    data.setUint32(0, nanoseconds * 4 + Math.floor(seconds / 2 ** 32));
    data.setUint32(4, seconds >>> 0);
  } else {
    data.setUint32(0, nanoseconds);
    data.setBigInt64(4, BigInt(seconds));
  }
  return extension(-1, new Uint8Array(data.buffer));
}

/**
 * The value as it goes on the wire. msgpackr writes integers past 32 bits as float64; as BigInt
 * they become int64, as the protocol's ints must. The JSON forms of docs/protocol.md §7 become
 * the values they stand for: timestamp and ext bytes written here, BigInt, binary.
 */
function wireValue(value: unknown): unknown {
  if (typeof value === "number" && Number.isInteger(value) && (value > 0xffffffff || value < -0x80000000)) return BigInt(value);
  if (Array.isArray(value)) return value.map(wireValue);
  if (value instanceof RawBytes) return value;
  if (typeof value === "object" && value !== null) {
    const form = value as Record<string, any>;
    if ("$timestamp" in form) return new RawBytes(timestamp(form.$timestamp.seconds, form.$timestamp.nanoseconds));
    if ("$ext" in form) return new RawBytes(extension(form.$ext.type, Buffer.from(form.$ext.base64, "base64")));
    if ("$bigint" in form) return BigInt(form.$bigint);
    if ("$bin" in form) return Uint8Array.from(Buffer.from(form.$bin, "base64"));
    if ("$entries" in form) return new Map(form.$entries.map(([k, v]: [unknown, unknown]) => [wireValue(k), wireValue(v)]));
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, wireValue(v)]));
  }
  return value;
}

/** A payload map `{ key: <bytes> }` written byte by byte, for values no encoder should produce. */
function rawPayload(entries: Array<[string, string]>): RawBytes {
  const parts = entries.flatMap(([key, hex]) => [...packr.pack(key), ...Buffer.from(hex.replaceAll("-", ""), "hex")]);
  return new RawBytes(new Uint8Array([0x80 | entries.length, ...parts]));
}

/**
 * The body of a value. Each RawBytes goes in as a placeholder string, which is then replaced by
 * its bytes: msgpackr writes no raw bytes of its own, and its extension table is shared with
 * the code under test, which this file must not lean on.
 */
function body(value: unknown): Uint8Array {
  const raws: Uint8Array[] = [];
  const placeholders = (v: unknown): unknown => {
    if (v instanceof RawBytes) return `\u0001raw-${raws.push(v.bytes) - 1}\u0001`;
    if (Array.isArray(v)) return v.map(placeholders);
    if (typeof v === "object" && v !== null && v.constructor === Object) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, placeholders(x)]));
    return v;
  };
  let bytes = Buffer.from(packr.pack(placeholders(wireValue(value))));
  raws.forEach((raw, i) => {
    const mark = Buffer.from(packr.pack(`\u0001raw-${i}\u0001`));
    const at = bytes.indexOf(mark);
    bytes = Buffer.concat([bytes.subarray(0, at), raw, bytes.subarray(at + mark.length)]);
  });
  return new Uint8Array(bytes);
}

function frame(bodyBytes: Uint8Array, claimedLength = bodyBytes.length): Uint8Array {
  const out = new Uint8Array(4 + bodyBytes.length);
  new DataView(out.buffer).setUint32(0, claimedLength, false);
  out.set(bodyBytes, 4);
  return out;
}

// Fixed ids and times so the file is reproducible. T0 = 2025-01-01T00:00:00Z, whose ULID time is 01JGFJJZ00.
const T0 = 1_735_689_600_000;
const id = (n: number) => `01JGFJJZ00${String(n).padStart(16, "0")}`;
const REQUEST_ID = id(1);
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

const request = (fields: Record<string, unknown> = {}, payload: unknown = { text: "hello" }) => ({
  message_id: REQUEST_ID,
  message_type: "request",
  trace_id: TRACE,
  source_agent: "cli",
  target_agent: "echo",
  reply_to: "cli",
  timestamp: T0,
  ttl: 60_000,
  seq: 1,
  ...fields,
  payload,
});

const answer = (type: string, n: number, payload: unknown) => ({
  message_id: id(n),
  message_type: type,
  trace_id: TRACE,
  source_agent: "echo",
  target_agent: "cli",
  correlation_id: REQUEST_ID,
  timestamp: T0 + n,
  ttl: 60_000,
  seq: n,
  payload,
});

const without = (value: Record<string, unknown>, ...keys: string[]) =>
  Object.fromEntries(Object.entries(value).filter(([k]) => !keys.includes(k)));

const hello = (fields: Record<string, unknown> = {}) => ({
  message_type: "hello", protocol: 1, node: "py-worker-1", codecs: ["msgpack"], window: 1024, ...fields,
});

type ValidCase = [name: string, description: string, frameType: FrameType, value: Record<string, unknown>, expectErrorCode?: number];
type InvalidCase = [name: string, description: string, stage: Stage, errorCode: number, reason: string, bytes: Uint8Array, partial?: boolean];

const TEXT = "你好，世界 👋🌍 Hermes 消息 🚀✨";

const VALID: ValidCase[] = [
  ["request-minimal", "A request with only the required fields, routed by target_agent.", "envelope", request()],
  ["response", "The response to request-minimal: correlation_id is the request's message_id, trace_id unchanged.", "envelope",
    answer("response", 2, { text: "hello" })],
  ["error-with-payload-fields", "An error answer: payload error_code, error_name, detail and the actionable fields of code 8.", "envelope",
    answer("error", 3, { error_code: 8, error_name: "UNROUTABLE", detail: "no actor named 'ocr'", target: "ocr", known: ["echo", "image"] })],
  ["progress", "A progress message for a running request.", "envelope", answer("progress", 4, { percent: 40, stage: "resize" })],
  ["cancel", "The requester cancels: correlation_id names the request.", "envelope",
    { ...answer("cancel", 5, { reason: "cancelled by sender" }), source_agent: "cli", target_agent: "echo" }],
  ["event-on-topic", "A fire-and-forget event routed by topic (no reply_to, no correlation_id).", "envelope",
    without({ ...request({ message_id: id(6), message_type: "event", topic: "task.image.generated", seq: 6 }, { url: "file:///tmp/a.png" }) }, "target_agent", "reply_to")],
  ["request-by-capability", "A request routed by capability to one healthy actor that declares it.", "envelope",
    without(request({ message_id: id(7), capability: "image.generate", seq: 7 }, { prompt: "a lighthouse" }), "target_agent")],
  ["request-with-headers", "headers: a map of strings, here a W3C traceparent and tracestate.", "envelope",
    request({ message_id: id(8), seq: 8, headers: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01`, tracestate: "hm=1" } })],
  ["request-priority-attempt-context", "The optional priority (0..9), attempt (redelivery count) and context_id.", "envelope",
    request({ message_id: id(9), seq: 9, context_id: "conversation-42", priority: 9, attempt: 3 })],
  ["request-chinese-emoji", "UTF-8 text in keys and values kept byte-exact: the frame holds the raw UTF-8 bytes, never escapes.", "envelope",
    request({ message_id: id(10), seq: 10 }, { text: TEXT, "名字": "赫尔墨斯", nested: { emoji: "🚀✨", zh: ["消息", "世界"] } })],
  ["request-unknown-field", "Fields this version does not know must be accepted and kept (the protocol grows by adding fields).", "envelope",
    request({ message_id: id(11), seq: 11, x_vendor_hint: "keep-me", x_limits: { gpu: 1 } })],
  ["request-map16-str16", "A payload map of 20 entries (map16) and a 300-byte string (str16).", "envelope",
    request({ message_id: id(12), seq: 12 }, { ...Object.fromEntries(Array.from({ length: 19 }, (_, i) => [`k${i}`, i * 1000])), long: "x".repeat(300) })],
  ["request-payload-timestamps", "Timestamps (extension -1) in the payload, in each of the three formats: 32-bit (seconds), 64-bit (30-bit nanoseconds, 34-bit seconds), 96-bit (32-bit nanoseconds, int64 seconds, here before 1970). `decoded` shows them in the JSON form of section 7; a receiver must keep seconds and nanoseconds exactly.", "envelope",
    request({ message_id: id(14), seq: 14 }, {
      t32: { $timestamp: { seconds: 1514862245, nanoseconds: 0 } },
      t64: { $timestamp: { seconds: 1514862245, nanoseconds: 678901234 } },
      t96: { $timestamp: { seconds: -1, nanoseconds: 999999999 } },
    })],
  ["request-payload-ext", "Extension values of types no one registered, as fixext 1, fixext 16, ext 8 and an empty ext 8 of a reserved negative type: a receiver passes each on with the same type and bytes.", "envelope",
    request({ message_id: id(15), seq: 15 }, {
      fixext1: { $ext: { type: 1, base64: "EA==" } },
      fixext16: { $ext: { type: 5, base64: Buffer.from("505152535455565758595a5b5c5d5e5f", "hex").toString("base64") } },
      ext8: { $ext: { type: 7, base64: "cHFy" } },
      empty: { $ext: { type: -128, base64: "" } },
    })],
  ["request-payload-bin-int64", "bin, the int64 and uint64 extremes, an integer past 2^53, and a float32-exact float: a receiver keeps the integers exact (a JavaScript receiver as BigInt past 2^53) and bin as bytes.", "envelope",
    request({ message_id: id(16), seq: 16 }, {
      bin: { $bin: "AP8=" },
      u64_max: { $bigint: "18446744073709551615" },
      i64_min: { $bigint: "-9223372036854775808" },
      past_2_53: { $bigint: "9007199254740993" },
      past_32_bits: 5_000_000_000,
      half: 0.5,
    })],
  ["request-payload-typed-keys", "Maps keyed by integers (a positive fixint, a negative fixint, a uint16) and by a boolean and nil, in the JSON form `$entries` of section 7: a receiver keeps each key's type and passes the map on with the same keys (a JavaScript receiver gives a Map).", "envelope",
    request({ message_id: id(17), seq: 17 }, {
      by_int: { $entries: [[1, "one"], [-1, "minus one"], [1000, "thousand"]] },
      by_bool_nil: { $entries: [[true, "yes"], [null, "nothing"]] },
    })],
  ["request-ttl-expired", "A valid request with ttl 0: it arrived with no life left. It is not handled; the receiver answers it with an error envelope of code 9 (TTL_EXPIRED).", "envelope",
    request({ message_id: id(13), seq: 13, ttl: 0 }), 9],
  ["register-external-not-durable", "The control plane (section 11): an actor started outside the tree registers on supervisor.sock, saying it keeps nothing across a restart (`durable: false`, additive): senders may then move what its crash leaves unacknowledged to a healthy sibling (section 4).", "envelope",
    request({ message_id: id(20), seq: 20, source_agent: "outside", reply_to: "outside", target_agent: "supervisor" },
      { op: "register", address: "outside", external: true, capabilities: ["work"], subscriptions: [], durable: false, pid: 4242 })],
  ["registry-upsert-durable", "A registry event from the supervisor (section 11) whose entry carries `durable` (additive; absent, a sender treats the instance as durable and waits for its restart).", "envelope",
    without(request({ message_id: id(21), message_type: "event", seq: 21, source_agent: "supervisor", target_agent: "outside" }, {
      updates: [{ type: "upsert", entry: {
        name: "work", instance: 1, address: "work#1", id: "4b1e6c3a9f0d2e7c", socket: "/run/hermes/work.1.sock", capabilities: ["work"], subscriptions: [],
        health: "healthy", pid: 4243, restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 1735689600000, kind: "actor", durable: false,
      } }],
    }), "reply_to")],
  ["awaiting", "A member tells the supervisor (section 11) that envelopes of its own wait for an instance it cannot reach (additive): the supervisor sends it the news of that instance's return at once, and may send it to members that wait for nothing later.", "envelope",
    without(request({ message_id: id(22), message_type: "event", seq: 22, source_agent: "reporter", target_agent: "supervisor" }, { op: "awaiting", address: "work#1" }), "reply_to")],
  ["hello", "The first frame of a connection: protocol 1, node, codecs (msgpack is mandatory), window.", "hello", hello()],
  ["hello-with-token", "A hello that offers a faster codec and carries an auth token.", "hello",
    hello({ node: "deno-ocr", codecs: ["msgpackr-records", "msgpack"], window: 256, token: "s3cret-token" })],
  ["hello-with-ack-delay", "A hello that lets the peer hold an ack with nothing to ride on for up to 30 s (ack_delay_ms, additive; absent, 5 ms): the peer sends it with its next frame, once the delay has passed, or when a ping comes.", "hello",
    hello({ node: "supervisor", max_frame_bytes: 16777216, ack_delay_ms: 30000 })],
  ["ack", "A cumulative ack: every envelope with seq <= 7 on this connection was handled.", "ack", { message_type: "ack", seq: 7 }],
  ["ping", "A liveness probe on an idle connection.", "ping", { message_type: "ping", nonce: 1 }],
  ["pong", "The answer to ping nonce 1.", "pong", { message_type: "pong", nonce: 1 }],
];

const bad = (fields: Record<string, unknown>, ...remove: string[]) => body(without(request(fields), ...remove));
const withPayload = (payload: unknown) => body({ ...request(), payload });
const truncated = body({ message_type: "ping", nonce: 7 }).subarray(0, -1);

const INVALID: InvalidCase[] = [
  ["payload-array", "payload is an array.", "envelope", 2, "payload must be a map", frame(withPayload([1, 2, 3]))],
  ["payload-string", "payload is a string.", "envelope", 2, "payload must be a map", frame(withPayload("hello"))],
  ["payload-nil", "payload is nil.", "envelope", 2, "payload must be a map", frame(withPayload(null))],
  ["missing-message-id", "No message_id.", "envelope", 2, "message_id is required", frame(bad({}, "message_id"))],
  ["message-id-not-ulid", "message_id has 26 characters but contains U, which Crockford base32 excludes.", "envelope", 2,
    "message_id must be a ULID", frame(bad({ message_id: "01JGFJJZ00000000000000000U" }))],
  ["unknown-message-type", "message_type is not one of the six envelope types.", "envelope", 2, "unknown message_type",
    frame(bad({ message_type: "notify" }))],
  ["request-without-reply-to", "A request must say where its response goes.", "envelope", 2, "a request needs reply_to",
    frame(bad({}, "reply_to"))],
  ["response-without-correlation-id", "A response must name its request.", "envelope", 2, "a response needs correlation_id",
    frame(body(without(answer("response", 2, {}), "correlation_id")))],
  ["no-route", "None of target_agent, topic or capability.", "envelope", 2, "one of target_agent, topic or capability is required",
    frame(bad({}, "target_agent"))],
  ["priority-10", "priority is outside 0..9.", "envelope", 2, "priority must be an integer 0..9", frame(bad({ priority: 10 }))],
  ["envelope-without-seq", "A valid envelope without seq: on a connection every envelope carries its per-direction seq.", "connection", 2,
    "seq is required on a connection", frame(bad({}, "seq"))],
  ["ack-seq-not-integer", "An ack whose seq is a string.", "control", 2, "ack.seq must be an integer", frame(body({ message_type: "ack", seq: "7" }))],
  ["body-array", "The frame body is a MessagePack array, not a map.", "decode", 2, "frame body must be a map", frame(body([1, 2, 3]))],
  ["body-string", "The frame body is a MessagePack string, not a map.", "decode", 2, "frame body must be a map", frame(body("hello"))],
  ["truncated-body", "The length prefix matches the body, but the body is a map cut off before its last byte.", "decode", 2,
    "frame body is not valid MessagePack", frame(truncated)],
  ["trailing-bytes", "The body holds a whole map followed by another value: a body is exactly one map.", "decode", 2,
    "frame body is not valid MessagePack", frame(new Uint8Array([...body({ message_type: "ping" }), 0xc0]))],
  ["payload-timestamp-nanoseconds-out-of-range", "payload.v is a 64-bit timestamp whose nanoseconds field is 1,000,000,000: no such time exists. The envelope is refused (code 2 naming payload.v), answered and acknowledged; the link goes on.", "payload", 2,
    "payload.v: timestamp nanoseconds 1000000000 out of range 0..999999999", frame(body({ ...request({ message_id: id(17), seq: 17 }), payload: rawPayload([["v", "d7-ff-ee-6b-28-00-00-00-00-00"]]) }))],
  ["payload-timestamp-bad-length", "payload.v is an extension -1 of 5 bytes: a timestamp has 4, 8 or 12.", "payload", 2,
    "payload.v: a timestamp (extension -1) of 5 bytes", frame(body({ ...request({ message_id: id(18), seq: 18 }), payload: rawPayload([["v", "c7-05-ff-00-00-00-00-00"]]) }))],
  ["payload-map-key-array", "payload.v is a map whose key is an array: payload maps are keyed by strings.", "payload", 2,
    "payload.v: map key 1 is an array", frame(body({ ...request({ message_id: id(19), seq: 19 }), payload: rawPayload([["v", "81-91-01-02"]]) }))],
  ["zero-length", "A length prefix of 0.", "framing", 2, "frame length 0 is invalid", new Uint8Array(4)],
  ["length-over-max", "A length prefix of 16 MiB + 1, one byte over the default maximum. hex holds only the 4-byte header: the receiver must refuse from the header alone, without waiting for or allocating the body.",
    "framing", 6, "frame exceeds the 16 MiB maximum", frame(new Uint8Array(0), MAX_FRAME_BYTES + 1), true],
  ["length-u32-max", "A length prefix of 0xFFFFFFFF. hex holds only the 4-byte header: refuse at once, allocate nothing.",
    "framing", 6, "frame exceeds the 16 MiB maximum", frame(new Uint8Array(0), 0xffffffff), true],
  ["hello-protocol-2", "A hello for a protocol version this side does not speak.", "hello", 2, "unsupported protocol version",
    frame(body(hello({ protocol: 2 })))],
  ["hello-without-msgpack", "A hello whose codecs omit the mandatory msgpack.", "hello", 2, "codecs must include \"msgpack\"",
    frame(body(hello({ codecs: ["msgpackr-records"] })))],
  ["hello-ack-delay-negative", "A hello whose ack_delay_ms is not an integer from 0 to 3,600,000 (an hour).", "hello", 2, "ack_delay_ms out of range",
    frame(body(hello({ ack_delay_ms: -1 })))],
];

/** Every vector, checked against the reference decoder. */
export function buildVectorFile(): VectorFile {
  const vectors: Vector[] = [];
  for (const [name, description, frameType, value, expectErrorCode] of VALID) {
    const bytes = body(value);
    const decoded = JSON.parse(JSON.stringify(value));
    const problems = referenceProblems(bytes, decoded);
    if (problems.length > 0) throw new Error(`${name}: ${problems.join("; ")}`);
    vectors.push({
      name, description, kind: "frame", hex: bytesToHex(frame(bytes)), valid: true, frame_type: frameType, decoded,
      ...(expectErrorCode !== undefined && { expect_error_code: expectErrorCode }),
    });
  }
  for (const [name, description, stage, errorCode, reason, bytes, partial] of INVALID) {
    vectors.push({
      name, description, kind: "frame", hex: bytesToHex(bytes), valid: false, error_code: errorCode, reason, stage,
      ...(partial && { partial_hex: true as const }),
    });
  }
  return {
    format: 1,
    protocol: 1,
    description: "Hermes mesh wire protocol v1 conformance vectors: whole frames (u32be length + MessagePack body) as hex. See docs/protocol.md, section \"Conformance vectors\".",
    max_frame_bytes: MAX_FRAME_BYTES,
    vectors,
  };
}

if (import.meta.main) {
  const file = buildVectorFile();
  await Bun.write(VECTORS_PATH, `${JSON.stringify(file, null, 2)}\n`);
  console.log(`wrote ${file.vectors.length} vectors to ${VECTORS_PATH}`);
}
