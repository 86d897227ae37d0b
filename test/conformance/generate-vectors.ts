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

/** msgpackr writes integers past 32 bits as float64; as BigInt they become int64, as the protocol's ints must. */
function wireValue(value: unknown): unknown {
  if (typeof value === "number" && Number.isInteger(value) && (value > 0xffffffff || value < -0x80000000)) return BigInt(value);
  if (Array.isArray(value)) return value.map(wireValue);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, wireValue(v)]));
  }
  return value;
}

function body(value: unknown): Uint8Array {
  return packr.pack(wireValue(value)).slice();
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
  ["request-ttl-expired", "A valid request with ttl 0: it arrived with no life left. It is not handled; the receiver answers it with an error envelope of code 9 (TTL_EXPIRED).", "envelope",
    request({ message_id: id(13), seq: 13, ttl: 0 }), 9],
  ["hello", "The first frame of a connection: protocol 1, node, codecs (msgpack is mandatory), window.", "hello", hello()],
  ["hello-with-token", "A hello that offers a faster codec and carries an auth token.", "hello",
    hello({ node: "deno-ocr", codecs: ["msgpackr-records", "msgpack"], window: 256, token: "s3cret-token" })],
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
  ["zero-length", "A length prefix of 0.", "framing", 2, "frame length 0 is invalid", new Uint8Array(4)],
  ["length-over-max", "A length prefix of 16 MiB + 1, one byte over the default maximum. hex holds only the 4-byte header: the receiver must refuse from the header alone, without waiting for or allocating the body.",
    "framing", 6, "frame exceeds the 16 MiB maximum", frame(new Uint8Array(0), MAX_FRAME_BYTES + 1), true],
  ["length-u32-max", "A length prefix of 0xFFFFFFFF. hex holds only the 4-byte header: refuse at once, allocate nothing.",
    "framing", 6, "frame exceeds the 16 MiB maximum", frame(new Uint8Array(0), 0xffffffff), true],
  ["hello-protocol-2", "A hello for a protocol version this side does not speak.", "hello", 2, "unsupported protocol version",
    frame(body(hello({ protocol: 2 })))],
  ["hello-without-msgpack", "A hello whose codecs omit the mandatory msgpack.", "hello", 2, "codecs must include \"msgpack\"",
    frame(body(hello({ codecs: ["msgpackr-records"] })))],
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
