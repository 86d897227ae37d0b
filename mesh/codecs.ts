/**
 * Frame body codecs (docs/protocol.md §2): plain MessagePack maps, which every member speaks;
 * msgpackr records, whose map shapes are sent once per connection; and hermes-envelope, whose
 * envelopes and acks are written field by field and whose payloads ride the records stream.
 * Each connection direction has its own codec instance (the two fast ones are stateful);
 * `decodeFrameBody` (frames.ts) is where a received body becomes a map or a coded refusal.
 */
import { Buffer } from "node:buffer";
import { Packr, RESERVE_START_SPACE, RESET_BUFFER_MODE, REUSE_BUFFER_MODE, Unpackr } from "msgpackr";
import type { Envelope } from "./envelope.ts";
import { mayHoldRecordTag, readExactly } from "./exact-reader.ts";
import { integersAsInt64, KEPT_BUFFER_BYTES, MAX_PAYLOAD_DEPTH, mayHaveTextedKeys, setOwn, settleDecodedMaps, sliceText, type SlicingBuffer, unpackExact } from "./msgpack-values.ts";

/**
 * Codec names. `msgpack` (plain maps) is mandatory; `hermes-envelope`, then `msgpackr-records`,
 * are the fast paths between members that have msgpackr.
 */
export const CodecName = {
  MSGPACK: "msgpack",
  MSGPACKR_RECORDS: "msgpackr-records",
  HERMES_ENVELOPE: "hermes-envelope",
} as const;
export type CodecName = (typeof CodecName)[keyof typeof CodecName];

/**
 * Encodes frame bodies for one direction of one connection. Stateful codecs (records) keep
 * their structure tables per connection and direction, so each side builds its own pair.
 */
export interface FrameCodec {
  readonly name: CodecName;
  /** Encodes a map. The result is only valid until the next call (it may share a buffer). */
  encode(value: unknown): Uint8Array;
  /**
   * Encodes a map as `encode` does, into the packer's buffer without a view of it: the body is
   * `bytes[start..end)` of the returned range, which is the same object on every call and valid
   * until the next encoding in this process. For the write path, which copies it at once.
   */
  encodeRange(value: unknown): EncodedRange;
  /** Decodes one whole frame body: `bytes[start..end)`, by default all of it. Throws on malformed bytes. */
  decode(bytes: Uint8Array, start?: number, end?: number): unknown;
}

/** Where an encoded body lies: `bytes[start..end)`. */
export interface EncodedRange {
  bytes: Uint8Array;
  start: number;
  end: number;
}

/**
 * msgpackr's REUSE_BUFFER_MODE | RESET_BUFFER_MODE: `pack` returns its whole buffer with the
 * body's `start` and `end` on it, and writes the next body at the same place. A view per frame
 * (`subarray`) was about 4% of a round trip's JavaScript (bench/loopback.ts), and the packer's
 * appending filled a 64 KiB buffer every few hundred envelopes.
 */
const PACK_IN_PLACE = REUSE_BUFFER_MODE | RESET_BUFFER_MODE;

/** `encode` and `encodeRange` over one packer, made on first use, `prepare` applied to each value first. */
function packerPair(options: ConstructorParameters<typeof Packr>[0], prepare: (value: unknown) => unknown = (value) => value): Pick<FrameCodec, "encode" | "encodeRange"> {
  let packr: Packr | undefined;
  const range: EncodedRange = { bytes: new Uint8Array(0), start: 0, end: 0 };
  return {
    encode: (value) => (packr ??= newPackr(options)).pack(prepare(value)),
    encodeRange(value) {
      const out = (packr ??= newPackr(options)).pack(prepare(value), PACK_IN_PLACE) as Uint8Array & { start?: number; end?: number };
      // msgpackr hands back a fresh array instead only where it had to copy (structured clones), without the two marks.
      range.bytes = out;
      range.start = out.start ?? 0;
      range.end = out.end ?? out.length;
      return range;
    },
  };
}

/**
 * Maps whose keys may have lost their type are decoded again as Maps and settled
 * (settleDecodedMaps): objects when every key is a string, Maps when a key is a number, a
 * boolean, nil, binary, a timestamp or an extension, so those keys come back as they went.
 * Down to the frame map, the payload map, its 512 levels and a margin.
 */
const SETTLED_LEVELS = MAX_PAYLOAD_DEPTH + 8;

/**
 * Plain MessagePack maps: what every implementation speaks. `copyBuffers` because the bytes a
 * socket hands over are reused after the callback returns. `int64AsType: "auto"` because other
 * encoders send every integer past 32 bits (any ms timestamp) as int64/uint64, which msgpackr
 * would otherwise decode as a BigInt that no envelope check accepts; past 2^53 it is a BigInt,
 * exact. Extensions read exactly (mesh/msgpack-values.ts); a body msgpackr cannot read as it is
 * goes through the exact reader there, so its envelope can still be answered.
 */
export function createPlainCodec(): FrameCodec {
  // msgpackr's typings omit "auto" (numbers up to 2^53, BigInt beyond), which its README documents.
  const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, copyBuffers: true, int64AsType: "auto" as "bigint" });
  // The exact reading of maps, for a body whose keys may have lost their type (mayHaveTextedKeys).
  const maps = new Unpackr({ useRecords: false, mapsAsObjects: false, copyBuffers: true, int64AsType: "auto" as "bigint" });
  return {
    name: CodecName.MSGPACK,
    ...packerPair({ useRecords: false, variableMapSize: true }, (value) => integersAsInt64(value, MAX_PAYLOAD_DEPTH + 1)),
    decode(bytes, start = 0, end = bytes.length) {
      if (mayHoldRecordTag(bytes.subarray(start, end))) return readExactly(bytes, start, end);
      try {
        const value = unpackExact(unpackr, bytes, start, end);
        return mayHaveTextedKeys(value, SETTLED_LEVELS) ? settleDecodedMaps(unpackExact(maps, bytes, start, end), SETTLED_LEVELS) : value;
      } catch (error) {
        try {
          return readExactly(bytes, start, end);
        } catch {
          throw error;
        }
      }
    },
  };
}

/**
 * msgpackr records in sequential mode: each new map shape is defined inline once, then sent
 * as a small record id. Both ends must see every frame in order, which a byte stream gives.
 * Only negotiated when both sides offer it (docs/protocol.md §2).
 */
export function createRecordsCodec(): FrameCodec {
  const unpackr = recordsUnpackr();
  return {
    name: CodecName.MSGPACKR_RECORDS,
    ...packerPair({ sequential: true }),
    // Plain objects travel as records, so a map here was a Map at the sender: it stays one, unsettled (no walk).
    decode: (bytes, start = 0, end = bytes.length) => unpackExact(unpackr, bytes, start, end),
  };
}

/** The reading side of a records stream. */
function recordsUnpackr(): Unpackr {
  return new Unpackr({ sequential: true, copyBuffers: true, mapsAsObjects: false, int64AsType: "auto" as "bigint" });
}

const PACK_BUFFER_BYTES = 64 * 1024;

/**
 * A packer writing into a 64 KiB buffer (msgpackr keeps one buffer for all its packers of a
 * process). `encode` appends each result after the previous one, and a new buffer of the current
 * size comes when one fills: msgpackr's default 8 KiB meant a new buffer every few dozen
 * envelopes. `encodeRange` writes in place (PACK_IN_PLACE). Created on first use, since a codec
 * instance used only for decoding never packs. (Handing it a buffer before every pack instead
 * breaks the sequential records mode, which keeps positions across calls.)
 */
function newPackr(options: ConstructorParameters<typeof Packr>[0]): Packr {
  const packr = new Packr(options);
  packr.useBuffer(Buffer.allocUnsafeSlow(PACK_BUFFER_BYTES));
  return packr;
}

/** Builds a fresh codec by name; plain msgpack for anything unknown. */
export function createCodec(name: string): FrameCodec {
  if (name === CodecName.HERMES_ENVELOPE) return createEnvelopeCodec();
  return name === CodecName.MSGPACKR_RECORDS ? createRecordsCodec() : createPlainCodec();
}

/** Codecs this implementation offers, fastest first (measured: bench/codec.bench.ts). */
export const SUPPORTED_CODECS: readonly CodecName[] = [CodecName.HERMES_ENVELOPE, CodecName.MSGPACKR_RECORDS, CodecName.MSGPACK];

/**
 * The codec both sides use after hello: the first codec in the accepting side's list that the
 * connecting side also offers. Both ends compute the same answer from the two hellos.
 */
export function negotiateCodec(acceptorCodecs: readonly string[], connectorCodecs: readonly string[]): CodecName {
  for (const name of acceptorCodecs) {
    if (connectorCodecs.includes(name) && (SUPPORTED_CODECS as readonly string[]).includes(name)) return name as CodecName;
  }
  return CodecName.MSGPACK;
}

/*
 * hermes-envelope (docs/protocol.md §2): an envelope's own fields written by hand in a fixed
 * order behind a bit set, only its payload through the records stream (msgpackr's records walk
 * each object's keys twice and dispatch on every value's type), and an ack in three bytes. What
 * does not fit the fast form (keys in another order or of other types, unknown fields, strings
 * past 255 characters, other control frames) goes whole through the records stream as form 0.
 */

/** The first byte of a hermes-envelope body. */
const Form = { RECORDS: 0, ENVELOPE: 1, ACK: 2 } as const;

/**
 * The envelope's fields in the order `build` (envelope.ts) assigns them, then the two a
 * connection adds; bit i of the field set stands for ENVELOPE_FIELDS[i]. An envelope goes in
 * the fast form only when its keys come in this order, so it decodes with its keys in the
 * same order. The table only grows at its end, and only under a new codec name.
 */
const ENVELOPE_FIELDS = [
  "message_id", "message_type", "trace_id", "source_agent", "target_agent", "topic", "capability", "reply_to",
  "correlation_id", "context_id", "priority", "timestamp", "ttl", "headers", "payload", "attempt", "seq",
] as const;
const MESSAGE_TYPE_BIT = 1 << 1, HEADERS_BIT = 1 << 13, PAYLOAD_BIT = 1 << 14;
/** An ack's two keys, message_type and seq. */
const ACK_FIELDS = MESSAGE_TYPE_BIT | (1 << 16);
/** source_agent, target_agent, topic, capability, reply_to: names that repeat on a connection. */
const NAME_FIELDS = (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7);
/** message_id, trace_id, correlation_id: ids that repeat within a frame. */
const ID_FIELDS = 1 | (1 << 2) | (1 << 8);
const ALL_FIELDS = (1 << ENVELOPE_FIELDS.length) - 1;
/** message_type as a positive fixint: its index here. */
const TYPE_CODES: readonly string[] = ["request", "response", "event", "error", "progress", "cancel"];

/** An envelope's own fields take at most this many bytes (the packer keeps that much room in front of the payload), and no string of them more than 255 characters. */
const MAX_HEAD_BYTES = 255, MAX_HEAD_STRING = 255;

/**
 * The hermes-envelope codec for one direction of one connection: a fast form for envelopes and
 * acks, the records stream for payloads and for everything else (docs/protocol.md §2).
 *
 * @example
 * const out = createEnvelopeCodec(), into = createEnvelopeCodec();
 * const body = out.encode({ message_type: "ack", seq: 7 });   // 02 07
 * into.decode(body);                                           // { message_type: "ack", seq: 7 }
 */
export function createEnvelopeCodec(): FrameCodec {
  let packr: Packr | undefined;
  const head = new Uint8Array(4 * MAX_HEAD_STRING + 64);
  const view = new DataView(head.buffer);
  const text = Buffer.from(head.buffer) as Buffer & { utf8Write(value: string, at: number): number };
  const range: EncodedRange = { bytes: head, start: 0, end: 0 };
  /** The field set writeHead wrote last. */
  let headFields = 0;

  /** Writes `value` at `at` as a msgpack str in the smallest header; -1 when it is not a string, too long, or `at` is -1 or past the head. */
  function writeString(value: unknown, at: number): number {
    if (typeof value !== "string" || at < 0 || at > MAX_HEAD_BYTES || value.length > MAX_HEAD_STRING) return -1;
    // Written where a fixstr's (or a str8's) text goes; text longer in UTF-8 than in characters moves up behind a bigger header.
    const header = value.length < 32 ? 1 : 2;
    const bytes = text.utf8Write(value, at + header);
    if (bytes < 32 && header === 1) return (head[at] = 0xa0 | bytes), at + 1 + bytes;
    if (bytes < 256) {
      if (header === 1) head.copyWithin(at + 2, at + 1, at + 1 + bytes);
      return (head[at] = 0xd9), (head[at + 1] = bytes), at + 2 + bytes;
    }
    head.copyWithin(at + 3, at + header, at + header + bytes);
    return (head[at] = 0xda), view.setUint16(at + 1, bytes), at + 3 + bytes;
  }

  function writeUint(value: number, at: number): number {
    if (value < 0x80) return (head[at] = value), at + 1;
    if (value < 0x100) return (head[at] = 0xcc), (head[at + 1] = value), at + 2;
    if (value < 0x10000) return (head[at] = 0xcd), view.setUint16(at + 1, value), at + 3;
    if (value < 0x100000000) return (head[at] = 0xce), view.setUint32(at + 1, value), at + 5;
    head[at] = 0xcf;
    view.setUint32(at + 1, Math.floor(value / 0x100000000));
    view.setUint32(at + 5, value >>> 0);
    return at + 9;
  }

  /** A number as the smallest msgpack int that holds it, or a float64 (fractions, -0, NaN, past 2^53). */
  function writeNumber(value: unknown, at: number): number {
    if (typeof value !== "number" || at < 0) return -1;
    if (!Number.isSafeInteger(value) || Object.is(value, -0)) return (head[at] = 0xcb), view.setFloat64(at + 1, value), at + 9;
    if (value >= 0) return writeUint(value, at);
    if (value >= -32) return (head[at] = value & 0xff), at + 1;
    if (value >= -0x80) return (head[at] = 0xd0), (head[at + 1] = value & 0xff), at + 2;
    if (value >= -0x8000) return (head[at] = 0xd1), view.setInt16(at + 1, value), at + 3;
    if (value >= -0x80000000) return (head[at] = 0xd2), view.setInt32(at + 1, value), at + 5;
    head[at] = 0xd3;
    view.setInt32(at + 1, Math.floor(value / 0x100000000));
    view.setUint32(at + 5, value >>> 0);
    return at + 9;
  }

  /** A headers map of strings; -1 when it is not one (or will not fit the head). */
  function writeHeaders(headers: unknown, at: number): number {
    if (at < 0 || at > MAX_HEAD_BYTES || typeof headers !== "object" || headers === null || Object.getPrototypeOf(headers) !== Object.prototype) return -1;
    const keys = Object.keys(headers);
    if (keys.length > 15) return -1;
    head[at++] = 0x80 | keys.length;
    for (const key of keys) {
      const value = (headers as Record<string, unknown>)[key];
      at = writeString(value, writeString(key, at));
    }
    return at;
  }

  /** The fast form's head for `value` (form, field set, fields), its length; -1 when it does not fit the form. */
  function writeHead(value: Record<string, unknown>): number {
    let fields = 0;
    let field = 0;
    // for-in, not Object.keys: the same keys in the same order for a plain object (encodeRange
    // takes no other), without an array per frame.
    for (const key in value) {
      while (field < ENVELOPE_FIELDS.length && ENVELOPE_FIELDS[field] !== key) field++;
      if (field === ENVELOPE_FIELDS.length) return -1; // unknown, or out of order
      fields |= 1 << field++;
    }
    if (fields === ACK_FIELDS && value.message_type === "ack") {
      const seq = value.seq;
      if (!Number.isSafeInteger(seq) || (seq as number) < 0) return -1;
      headFields = 0;
      head[0] = Form.ACK;
      return writeUint(seq as number, 1);
    }
    if ((fields & MESSAGE_TYPE_BIT) === 0) return -1; // a control frame, or not a frame at all
    headFields = fields;
    head[0] = Form.ENVELOPE;
    const env = value as Partial<Envelope>;
    let at = writeUint(fields, 1);
    // Field by field in the table's order, each read by name (a loop over the table reading
    // value[name] cost as much as msgpackr's walk). A write that does not fit returns -1, and so do the ones after it.
    if (fields & 1) at = writeString(env.message_id, at);
    if (fields & 2) {
      const code = TYPE_CODES.indexOf(env.message_type as string);
      at = code < 0 || at < 0 ? writeString(env.message_type, at) : ((head[at] = code), at + 1);
    }
    if (fields & 4) at = writeString(env.trace_id, at);
    if (fields & 8) at = writeString(env.source_agent, at);
    if (fields & 16) at = writeString(env.target_agent, at);
    if (fields & 32) at = writeString(env.topic, at);
    if (fields & 64) at = writeString(env.capability, at);
    if (fields & 128) at = writeString(env.reply_to, at);
    if (fields & 256) at = writeString(env.correlation_id, at);
    if (fields & 512) at = writeString(env.context_id, at);
    if (fields & 1024) at = writeNumber(env.priority, at);
    if (fields & 2048) at = writeNumber(env.timestamp, at);
    if (fields & 4096) at = writeNumber(env.ttl, at);
    if (fields & 8192) at = writeHeaders(env.headers, at);
    if (fields & 32768) at = writeNumber(env.attempt, at);
    if (fields & 65536) at = writeNumber(env.seq, at);
    return at > MAX_HEAD_BYTES ? -1 : at;
  }

  /** Packs `value` into the records stream behind `length` bytes of the head, which are copied in front of it. */
  function packBehind(value: unknown, length: number): EncodedRange {
    const out = (packr ??= newPackr({ sequential: true })).pack(value, PACK_IN_PLACE | RESERVE_START_SPACE | MAX_HEAD_BYTES) as unknown as Uint8Array & { start: number; end: number };
    const start = out.start + MAX_HEAD_BYTES - length;
    text.copy(out, start, 0, length);
    range.bytes = out;
    range.start = start;
    range.end = out.end;
    return range;
  }

  function encodeRange(value: unknown): EncodedRange {
    // A plain object only: msgpackr writes a Date, an Error or a class with toJSON as what they are (form 0).
    const length = typeof value === "object" && value !== null && value.constructor === Object ? writeHead(value as Record<string, unknown>) : -1;
    if (length < 0) {
      head[0] = Form.RECORDS;
      return packBehind(value, 1);
    }
    if (headFields & PAYLOAD_BIT) return packBehind((value as Record<string, unknown>).payload, length);
    range.bytes = head;
    range.start = 0;
    range.end = length;
    return range;
  }

  return {
    name: CodecName.HERMES_ENVELOPE,
    encode(value) {
      const body = encodeRange(value);
      return Uint8Array.prototype.slice.call(body.bytes, body.start, body.end); // a copy: a Buffer's own slice is a view
    },
    encodeRange,
    decode: envelopeReader(),
  };
}

/**
 * Reads hermes-envelope bodies for one direction of one connection: form 1 field by field,
 * payloads and form 0 through the records stream. Every read is bounded by the body's end; a
 * body that breaks the form throws (and, the stream being stateful, closes the connection).
 */
function envelopeReader(): (bytes: Uint8Array, start?: number, end?: number) => unknown {
  const unpackr = recordsUnpackr();
  const values: unknown[] = new Array(ENVELOPE_FIELDS.length).fill(undefined);
  let source: Uint8Array | undefined;
  let text = EMPTY;
  let view: DataView | undefined; // made only for the rare float or int64 past 2^53
  let at = 0;
  let stop = 0;

  const uint16 = (i: number): number => (source![i]! << 8) | source![i + 1]!;
  const uint32 = (i: number): number => ((source![i]! << 24) | (source![i + 1]! << 16) | (source![i + 2]! << 8) | source![i + 3]!) >>> 0;
  const viewOf = (): DataView => (view ??= new DataView(source!.buffer, source!.byteOffset, source!.byteLength));

  // The last string of each address field, and its length and bytes: the same few names come again and again on a
  // connection, and comparing a few bytes costs less than a new string (bench/loopback.ts: 0.3 us a round trip).
  const names: string[] = new Array(ENVELOPE_FIELDS.length).fill(""), nameBytes = new Uint8Array(32 * ENVELOPE_FIELDS.length);

  /** The length of the fixstr at `at` when it lies whole in the body (0 to 31 bytes), else -1. */
  function fixstrLength(): number {
    const length = (at < stop ? source![at]! : 0) - 0xa0;
    return length >= 0 && length <= 31 && at + 1 + length <= stop ? length : -1;
  }

  /** True when the fixstr at `at`, of `length` bytes, holds the same text as `bytes[from..from + length)`. */
  function sameText(bytes: Uint8Array, from: number, length: number): boolean {
    let i = 0;
    while (i < length && bytes[from + i] === source![at + 1 + i]) i++;
    return i === length;
  }

  function readName(bit: number): unknown {
    const length = fixstrLength();
    if (length < 0) return readScalar();
    const kept = bit * 32;
    if (names[bit]!.length === length && nameBytes[kept + 31] === length && sameText(nameBytes, kept, length)) return (at += 1 + length), names[bit];
    const value = readString(length, 1);
    for (let i = 0; i < length; i++) nameBytes[kept + i] = source![at - length + i]!;
    return (nameBytes[kept + 31] = length), (names[bit] = value);
  }

  // The id read last in this frame (its text's start, length and string): a request's trace_id is
  // its message_id, an answer's correlation_id its trace_id, and the same bytes again are the same
  // string, compared for less than a new one costs (sliceText checks every byte, then slices).
  let idAt = -1, idLength = 0, idValue = "";

  /** message_id, trace_id or correlation_id: the id read before in this frame when the bytes match. */
  function readId(): unknown {
    const length = fixstrLength();
    if (length < 0) return readScalar();
    if (idAt >= 0 && length === idLength && sameText(source!, idAt, length)) return (at += 1 + length), idValue;
    idAt = at + 1;
    idLength = length;
    return (idValue = readString(length, 1));
  }

  /** `end`, when a records value lies before it: msgpackr would read on past an empty one. */
  function needValue(end: number): number {
    if (at >= end) throw new Error("hermes-envelope body: its records value is missing");
    return end;
  }

  /** Room for `count` more bytes, or a throw: the body was cut short. */
  function need(count: number): void {
    if (at + count > stop) throw new Error("hermes-envelope body cut short");
  }

  function readString(length: number, headerBytes: number): string {
    need(headerBytes + length);
    return sliceText(text, (at += headerBytes), (at += length));
  }

  function readUint64(signed: boolean): number | bigint {
    need(8);
    const value = (signed ? uint32(at) | 0 : uint32(at)) * 0x100000000 + uint32(at + 4);
    const exact = Number.isSafeInteger(value) ? value : signed ? viewOf().getBigInt64(at) : viewOf().getBigUint64(at);
    at += 8;
    return exact;
  }

  /** A str, int or float: what an envelope's fields are written as. */
  function readScalar(): unknown {
    need(1);
    const token = source![at]!;
    if (token < 0x80) return at++, token;
    if (token >= 0xe0) return at++, token - 0x100;
    if (token >= 0xa0 && token <= 0xbf) return readString(token & 0x1f, 1);
    at++;
    switch (token) {
      case 0xd9: return need(1), readString(source![at]!, 1);
      case 0xda: return need(2), readString(uint16(at), 2);
      case 0xdb: return need(4), readString(uint32(at), 4);
      case 0xcc: return need(1), source![at++]!;
      case 0xcd: return need(2), (at += 2), uint16(at - 2);
      case 0xce: return need(4), (at += 4), uint32(at - 4);
      case 0xcf: return readUint64(false);
      case 0xd0: return need(1), (at += 1), (source![at - 1]! << 24) >> 24;
      case 0xd1: return need(2), (at += 2), (uint16(at - 2) << 16) >> 16;
      case 0xd2: return need(4), (at += 4), uint32(at - 4) | 0;
      case 0xd3: return readUint64(true);
      case 0xca: return need(4), (at += 4), viewOf().getFloat32(at - 4);
      case 0xcb: return need(8), (at += 8), viewOf().getFloat64(at - 8);
    }
    throw new Error(`hermes-envelope field: byte 0x${token.toString(16)} is not a str, int or float`);
  }

  function readHeaders(): Record<string, string> {
    need(1);
    const token = source![at++]!;
    if (token < 0x80 || token > 0x8f) throw new Error("hermes-envelope headers: not a fixmap");
    const headers: Record<string, string> = {};
    for (let i = token & 0x0f; i > 0; i--) {
      const key = readScalar(), value = readScalar();
      if (typeof key !== "string" || typeof value !== "string") throw new Error("hermes-envelope headers: a key or value is not a str");
      setOwn(headers, key, value);
    }
    return headers;
  }

  function readEnvelope(bytes: Uint8Array, end: number): Record<string, unknown> {
    const fields = readScalar();
    if (typeof fields !== "number" || !Number.isInteger(fields) || fields < 0 || fields > ALL_FIELDS) {
      throw new Error(`hermes-envelope field set ${String(fields)} is not a set of the ${ENVELOPE_FIELDS.length} fields`);
    }
    idAt = -1;
    for (let bit = 0; bit < ENVELOPE_FIELDS.length; bit++) {
      const mask = 1 << bit;
      if ((fields & mask) === 0 || mask === PAYLOAD_BIT) continue;
      if (mask & ID_FIELDS) values[bit] = readId();
      else if (mask === HEADERS_BIT) values[bit] = readHeaders();
      else if (mask === MESSAGE_TYPE_BIT && at < stop && source![at]! < 0x80) values[bit] = messageTypeOf(source![at++]!);
      else values[bit] = mask & NAME_FIELDS ? readName(bit) : readScalar();
    }
    if (fields & PAYLOAD_BIT) values[14] = unpackExact(unpackr, bytes, at, needValue(end));
    else if (at !== end) throw new Error("hermes-envelope body: bytes after its last field");
    // Plain assignments in the table's order: one object shape per field set, as build() makes it.
    const env: Record<string, unknown> = {};
    if (fields & 1) env.message_id = values[0];
    if (fields & 2) env.message_type = values[1];
    if (fields & 4) env.trace_id = values[2];
    if (fields & 8) env.source_agent = values[3];
    if (fields & 16) env.target_agent = values[4];
    if (fields & 32) env.topic = values[5];
    if (fields & 64) env.capability = values[6];
    if (fields & 128) env.reply_to = values[7];
    if (fields & 256) env.correlation_id = values[8];
    if (fields & 512) env.context_id = values[9];
    if (fields & 1024) env.priority = values[10];
    if (fields & 2048) env.timestamp = values[11];
    if (fields & 4096) env.ttl = values[12];
    if (fields & 8192) env.headers = values[13];
    if (fields & 16384) env.payload = values[14];
    if (fields & 32768) env.attempt = values[15];
    if (fields & 65536) env.seq = values[16];
    values[13] = values[14] = undefined; // no payload or headers kept alive until the next frame
    return env;
  }

  function readBody(bytes: Uint8Array, start: number, end: number): unknown {
    const form = bytes[start];
    if (form === Form.RECORDS) return unpackExact(unpackr, bytes, start + 1, needValue(end));
    if (form === Form.ENVELOPE) return readEnvelope(bytes, end);
    if (form !== Form.ACK) throw new Error(`hermes-envelope body of form ${form}: forms are 0, 1 and 2`);
    const seq = readScalar();
    if (at !== end) throw new Error("hermes-envelope ack: bytes after its seq");
    return { message_type: "ack", seq };
  }

  return (bytes, start = 0, end = bytes.length) => {
    if (bytes !== source) {
      source = bytes;
      text = (typeof (bytes as SlicingBuffer).latin1Slice === "function" ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) as SlicingBuffer;
      view = undefined;
    }
    if (end <= start) throw new Error("hermes-envelope body is empty");
    at = start + 1;
    stop = end;
    try {
      return readBody(bytes, start, end);
    } finally {
      if (bytes.byteLength > KEPT_BUFFER_BYTES) (source = view = undefined), (text = EMPTY); // a big frame's own buffer is not kept
    }
  };
}

const EMPTY = Buffer.alloc(0) as SlicingBuffer;

function messageTypeOf(code: number): string {
  const type = TYPE_CODES[code];
  if (type === undefined) throw new Error(`hermes-envelope message_type code ${code}: codes are 0 to ${TYPE_CODES.length - 1}`);
  return type;
}
