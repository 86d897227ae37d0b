/**
 * Builds docs/conformance/hermes-envelope-stream.json: one direction of a connection that
 * negotiated `hermes-envelope` (docs/protocol.md §2), frame by frame. Run by hand after changing
 * a frame:
 *
 *   node_modules/.bin/bun test/conformance/generate-envelope-stream.ts
 *
 * The bytes are put together here from the protocol's description, not by the project's codec:
 * the form byte, the field set and the fields written by @msgpack/msgpack (an independent
 * encoder), the payloads and form-0 bodies by a records packer of this script's own.
 * envelope-stream.test.ts decodes and encodes the stream with the project's codec.
 */
import { encode as referenceEncode } from "@msgpack/msgpack";
import { Packr } from "msgpackr";
import { bytesToHex } from "./vector-format.ts";

export const STREAM_PATH = new URL("../../docs/conformance/hermes-envelope-stream.json", import.meta.url).pathname;

/** The envelope's fields in table order (docs/protocol.md §2, "hermes-envelope"). */
const FIELDS = ["message_id", "message_type", "trace_id", "source_agent", "target_agent", "topic", "capability", "reply_to",
  "correlation_id", "context_id", "priority", "timestamp", "ttl", "headers", "payload", "attempt", "seq"];
const TYPES = ["request", "response", "event", "error", "progress", "cancel"];

/** One frame of the stream: its name, what it shows, and the value it carries. */
export interface StreamFrame {
  name: string;
  description: string;
  hex: string;
  decoded: Record<string, unknown>;
}

export interface StreamFile {
  format: 1;
  codec: "hermes-envelope";
  description: string;
  frames: StreamFrame[];
}

const ID = (n: number) => `01JGFJJZ${String(n).padStart(18, "0")}`;
const T0 = 1_735_689_600_000;

const FRAMES: [string, string, Record<string, unknown>, "envelope" | "ack" | "records"][] = [
  ["request", "A request in form 1: field set, message_type as code 0, timestamp as uint64, then its payload as the records stream's first value (a record defined inline).",
    { message_id: ID(1), message_type: "request", trace_id: ID(1), source_agent: "cli", target_agent: "echo", reply_to: "cli", timestamp: T0, ttl: 60_000, payload: { text: "hi", n: 1 }, seq: 1 }, "envelope"],
  ["ack", "An ack in form 2: its seq as a msgpack uint.", { message_type: "ack", seq: 1 }, "ack"],
  ["response", "A response in form 1, correlated; its payload has the request's shape, so the records stream sends only the record's id and the values.",
    { message_id: ID(2), message_type: "response", trace_id: ID(1), source_agent: "echo", target_agent: "cli", correlation_id: ID(1), timestamp: T0 + 1, ttl: 60_000, payload: { text: "hi", n: 2 }, seq: 2 }, "envelope"],
  ["event-headers-unicode", "An event on a topic in form 1 with priority, headers, attempt and UTF-8 text in a field and in the payload.",
    { message_id: ID(3), message_type: "event", trace_id: "t7u8v9", source_agent: "代理-🚀", topic: "news", priority: 3, timestamp: T0 + 2, ttl: 500, headers: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" }, payload: { 名字: "赫尔墨斯", v: -40 }, attempt: 2, seq: 3 }, "envelope"],
  ["ping-form-0", "A ping: a control frame other than ack goes whole through the records stream, as form 0.", { message_type: "ping", nonce: 1 }, "records"],
  ["unknown-field-form-0", "An envelope with a field the table does not have: form 0, the whole map through the records stream, its keys in their order.",
    { message_id: ID(4), message_type: "request", trace_id: ID(4), source_agent: "cli", target_agent: "echo", reply_to: "cli", timestamp: T0 + 3, ttl: 60_000, payload: { text: "hi", n: 3 }, x_note: "kept", seq: 4 }, "records"],
];

/** The stream, built from the description. */
export function buildEnvelopeStream(): StreamFile {
  const records = new Packr({ sequential: true });
  const frames = FRAMES.map(([name, description, value, form]) => {
    let body: Uint8Array;
    if (form === "ack") body = concat([Uint8Array.of(2), referenceEncode(value.seq)]);
    else if (form === "records") body = concat([Uint8Array.of(0), Uint8Array.from(records.pack(value))]);
    else {
      let set = 0;
      for (const key of Object.keys(value)) set |= 1 << FIELDS.indexOf(key);
      const parts = [Uint8Array.of(1), referenceEncode(set)];
      for (const [bit, field] of FIELDS.entries()) {
        if (!(set & (1 << bit)) || field === "payload") continue;
        parts.push(field === "message_type" ? Uint8Array.of(TYPES.indexOf(value[field] as string)) : referenceEncode(value[field]));
      }
      parts.push(Uint8Array.from(records.pack(value.payload)));
      body = concat(parts);
    }
    const frame = concat([Uint8Array.of(body.length >>> 24, (body.length >>> 16) & 0xff, (body.length >>> 8) & 0xff, body.length & 0xff), body]);
    return { name, description, hex: bytesToHex(frame), decoded: value };
  });
  return {
    format: 1,
    codec: "hermes-envelope",
    description: "One direction of a connection that negotiated the hermes-envelope codec, frame by frame (u32be length + body) as hex, in order: the payloads share one msgpackr records stream. See docs/protocol.md, section 2 and \"Conformance vectors\".",
    frames,
  };
}

function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) out.set(part, (at += part.length) - part.length);
  return out;
}

if (import.meta.main) {
  const file = buildEnvelopeStream();
  await Bun.write(STREAM_PATH, `${JSON.stringify(file, null, 2)}\n`);
  console.log(`wrote ${file.frames.length} frames to ${STREAM_PATH}`);
}
