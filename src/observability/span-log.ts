import { Buffer } from "node:buffer";
import { readSync } from "node:fs";
import type { Envelope } from "../../mesh/envelope.ts";

/**
 * The per-message records of an event log (`handled` and `sent`), kept in binary beside its
 * JSON Lines: `<mesh dir>/logs/<address>.spans`. Why: written as JSON text, the line of every
 * handled message cost an actor about a third of its CPU per event (building and encoding it,
 * and the garbage it left); a binary record is a few field writes and no garbage. The reading
 * side (`readEvents`, `hermes-mesh events`, the trace lookups) turns records back into the
 * same objects the JSON lines were, so nothing downstream sees a difference.
 *
 * Layout (little-endian), docs/gateway.md "Tracing":
 * - The file is a sequence of batches, one per flush. A batch: the 8 magic bytes
 *   `00 48 53 50 41 4e 53 02` ("\0HSPANS\x02"), u32 length of its body, the body (u16 length of
 *   the log's bound fields as JSON, `{"actor":"echo#0"}`, those bytes, then records), and the
 *   body's u32 length again.
 * - A record: u32 length of the rest of the record, u8 kind (1 handled, 2 sent), u8 flags (which
 *   optional strings follow), f64 ts (ms since the epoch), then by kind:
 *   - handled: f64 started_at (ms), f64 duration (ms), u32 attempt, i32 error code (when flagged
 *     as failed; -2^31: a code that was no number, read back as null);
 *     strings type, trace_id (absent when it equals message_id), message_id (empty for a span
 *     named by `span_id` instead), source, and the optional ones flagged: span_id,
 *     parent_span_id, topic, capability, label.
 *   - sent: strings type, trace_id (as above), message_id, to (a JSON array), and the flagged
 *     parent_span_id, topic, capability, correlation_id.
 * - A string: u32 byte length, UTF-8 bytes.
 *
 * The writing side is here, the reading side (decodeSpans) in span-log-reader.ts.
 *
 * A batch is written whole or not at all by a live process. Readers go from batch to batch by
 * their lengths, so nothing a sender put in a string is ever taken for a batch's start. A batch
 * can be cut short only at a file's end (a writer killed mid-write): the next writer finds its
 * length at the end not matching (`spanFileEndsWhole`) and starts a new file, the cut one
 * becoming `.1.spans`, whose readers stop at the cut. Bytes damaged in the middle of a file
 * (not the writer's doing) are skipped to the next magic.
 */

/** A decoded record: the object its JSON line would parse to (an event log's `SpanEvent`). */
export interface SpanEvent {
  event: string;
  [field: string]: unknown;
}

/** The first bytes of every batch. */
export const SPAN_BATCH_MAGIC = Buffer.from([0x00, 0x48, 0x53, 0x50, 0x41, 0x4e, 0x53, 0x02]);
/** Magic, then the u32 length of the body. */
export const BATCH_HEADER_BYTES = SPAN_BATCH_MAGIC.length + 4;
/** The body's length again, after it: where a file ends whole, its last batch can be found from its end. */
export const TRAILER_BYTES = 4;
/** A batch longer than this is not believed (a torn or foreign file): the reader looks for the next magic. */
export const MAX_BATCH_BYTES = 256 * 1024 * 1024;

export const Kind = { HANDLED: 1, SENT: 2 } as const;

/** Which optional strings a record carries. */
export const Flag = {
  TRACE_IS_MESSAGE: 1,
  SPAN_ID: 2,
  PARENT: 4,
  TOPIC: 8,
  CAPABILITY: 16,
  LABEL: 32,
  CORRELATION: 64,
  /** The handling failed: the i32 holds its error code. */
  ERROR: 128,
} as const;

/** Most bytes a string of `text` takes in a record: its length and at most 3 UTF-8 bytes per UTF-16 unit. */
const room = (text: string | undefined) => (text === undefined ? 0 : 4 + text.length * 3);

/** What a gateway (or any member that handles without an envelope of its own) records of one handling. */
export interface HandledSpan {
  type: string;
  trace_id: string;
  span_id: string;
  parent_span_id?: string;
  label?: string;
  started_at: number;
  duration_ms: number;
  error_code?: number;
}

/**
 * The records of one batch being collected: encoded as they are written, so each one's strings
 * die young. `take()` ends the batch (its header filled in) and hands back its bytes.
 *
 * @example
 * const batch = new SpanBatch(JSON.stringify({ actor: "echo#0" }));
 * batch.handled(envelope, startedAt, 0.42, 1, undefined, undefined);
 * writeSync(fd, batch.take());
 */
export class SpanBatch {
  readonly #bound: Buffer;
  #buffer: Buffer;
  #end = 0;
  #count = 0;

  constructor(boundJson: string, initialBytes = 16 * 1024) {
    const bound = Buffer.from(boundJson);
    // Its length is a u16: fields past that (never a member's address) are left out.
    this.#bound = bound.length <= 0xffff ? bound : Buffer.from("{}");
    this.#buffer = Buffer.allocUnsafe(Math.max(initialBytes, BATCH_HEADER_BYTES + 2 + this.#bound.length + TRAILER_BYTES));
    this.#begin();
  }

  /** Records in the batch. */
  get count(): number {
    return this.#count;
  }

  /** Bytes the batch holds now, its header included. */
  get bytes(): number {
    return this.#end;
  }

  /** One handled envelope: `startedAt` and `durationMs` in ms, `errorCode` when it failed; `now` the record's time (ms since the epoch). */
  handled(env: Envelope, startedAt: number, durationMs: number, attempt: number, errorCode: number | undefined, parentSpanId: string | undefined, now = Date.now()): void {
    const traceIsMessage = env.trace_id === env.message_id;
    const { topic, capability } = env;
    const flags = (traceIsMessage ? Flag.TRACE_IS_MESSAGE : 0) | (parentSpanId !== undefined ? Flag.PARENT : 0) | (topic !== undefined ? Flag.TOPIC : 0) | (capability !== undefined ? Flag.CAPABILITY : 0) |
      (errorCode !== undefined ? Flag.ERROR : 0);
    let at = this.#record(
      Kind.HANDLED,
      flags,
      28 + room(env.message_type) + (traceIsMessage ? 0 : room(env.trace_id)) + room(env.message_id) + room(env.source_agent) + room(parentSpanId) + room(topic) + room(capability),
      now,
    );
    const b = this.#buffer;
    b.writeDoubleLE(startedAt, at);
    b.writeDoubleLE(durationMs, at + 8);
    b.writeUInt32LE(attempt, at + 16);
    b.writeInt32LE(errorCodeField(errorCode), at + 20);
    at = this.#string(env.message_type, at + 24);
    if (!traceIsMessage) at = this.#string(env.trace_id, at);
    at = this.#string(env.message_id, at);
    at = this.#string(env.source_agent, at);
    if (parentSpanId !== undefined) at = this.#string(parentSpanId, at);
    if (topic !== undefined) at = this.#string(topic, at);
    if (capability !== undefined) at = this.#string(capability, at);
    this.#close(at);
  }

  /** One handling named by its span id rather than an envelope (the gateway's span of an HTTP request). */
  handledSpan(span: HandledSpan): void {
    const flags = Flag.SPAN_ID | (span.parent_span_id !== undefined ? Flag.PARENT : 0) | (span.label !== undefined ? Flag.LABEL : 0) | (span.error_code !== undefined ? Flag.ERROR : 0);
    let at = this.#record(Kind.HANDLED, flags, 28 + room(span.type) + room(span.trace_id) + 8 + room(span.span_id) + room(span.parent_span_id) + room(span.label));
    const b = this.#buffer;
    b.writeDoubleLE(span.started_at, at);
    b.writeDoubleLE(span.duration_ms, at + 8);
    b.writeUInt32LE(0, at + 16);
    b.writeInt32LE(errorCodeField(span.error_code), at + 20);
    at = this.#string(span.type, at + 24);
    at = this.#string(span.trace_id, at);
    at = this.#string("", at); // no message_id
    at = this.#string("", at); // no source
    at = this.#string(span.span_id, at);
    if (span.parent_span_id !== undefined) at = this.#string(span.parent_span_id, at);
    if (span.label !== undefined) at = this.#string(span.label, at);
    this.#close(at);
  }

  /** One envelope routed to `destinations` (JSON text of their names). */
  sent(env: Envelope, destinationsJson: string, parentSpanId: string | undefined): void {
    const traceIsMessage = env.trace_id === env.message_id;
    const { topic, capability, correlation_id } = env;
    const flags = (traceIsMessage ? Flag.TRACE_IS_MESSAGE : 0) | (parentSpanId !== undefined ? Flag.PARENT : 0) | (topic !== undefined ? Flag.TOPIC : 0) |
      (capability !== undefined ? Flag.CAPABILITY : 0) | (correlation_id !== undefined ? Flag.CORRELATION : 0);
    let at = this.#record(
      Kind.SENT,
      flags,
      room(env.message_type) + (traceIsMessage ? 0 : room(env.trace_id)) + room(env.message_id) + room(destinationsJson) + room(parentSpanId) + room(topic) + room(capability) + room(correlation_id),
    );
    at = this.#string(env.message_type, at);
    if (!traceIsMessage) at = this.#string(env.trace_id, at);
    at = this.#string(env.message_id, at);
    at = this.#string(destinationsJson, at);
    if (parentSpanId !== undefined) at = this.#string(parentSpanId, at);
    if (topic !== undefined) at = this.#string(topic, at);
    if (capability !== undefined) at = this.#string(capability, at);
    if (correlation_id !== undefined) at = this.#string(correlation_id, at);
    this.#close(at);
  }

  /**
   * Ends the batch: its length is written before and after its body, and the bytes are handed
   * back (valid until the next record is written). The next record starts a new batch.
   */
  take(): Buffer {
    const length = this.#end - BATCH_HEADER_BYTES;
    this.#buffer.writeUInt32LE(length, SPAN_BATCH_MAGIC.length);
    this.#buffer.writeUInt32LE(length, this.#end); // #record keeps room for it
    const bytes = this.#buffer.subarray(0, this.#end + TRAILER_BYTES);
    this.#begin();
    return bytes;
  }

  /** Drops what the batch holds; `shrinkTo` lets a buffer grown for a huge record go. */
  reset(shrinkTo?: number): void {
    if (shrinkTo !== undefined && this.#buffer.length > shrinkTo) this.#buffer = Buffer.allocUnsafe(shrinkTo);
    this.#begin();
  }

  #begin(): void {
    const b = this.#buffer;
    SPAN_BATCH_MAGIC.copy(b, 0);
    b.writeUInt16LE(this.#bound.length, BATCH_HEADER_BYTES);
    this.#bound.copy(b, BATCH_HEADER_BYTES + 2);
    this.#end = BATCH_HEADER_BYTES + 2 + this.#bound.length;
    this.#count = 0;
  }

  /** Starts a record of at most `body` bytes after its fixed part; returns where its body starts. */
  #record(kind: number, flags: number, body: number, now = Date.now()): number {
    const need = this.#end + 14 + body + TRAILER_BYTES;
    if (need > this.#buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.#buffer.length * 2));
      this.#buffer.copy(grown, 0, 0, this.#end);
      this.#buffer = grown;
    }
    const b = this.#buffer;
    const at = this.#end;
    b[at + 4] = kind;
    b[at + 5] = flags;
    b.writeDoubleLE(now, at + 6);
    return at + 14;
  }

  #close(end: number): void {
    this.#buffer.writeUInt32LE(end - this.#end - 4, this.#end);
    this.#end = end;
    this.#count++;
  }

  #string(text: string, at: number): number {
    const written = (this.#buffer as unknown as Utf8Writable).utf8Write(text, at + 4);
    this.#buffer.writeUInt32LE(written, at);
    return at + 4 + written;
  }
}

/** An error code as its record holds it (beside Flag.ERROR): NO_NUMBER for one that is no 32-bit integer (read back as null). */
function errorCodeField(code: number | undefined): number {
  if (code === undefined) return 0;
  return Number.isInteger(code) && code > NO_NUMBER && code <= 0x7fffffff ? code : NO_NUMBER;
}

export const NO_NUMBER = -0x80000000;

/** Node's, Bun's and Deno's Buffer all have it; their type declarations do not all say so. */
interface Utf8Writable {
  utf8Write(text: string, offset: number): number;
}

/**
 * True when a span file of `size` bytes (open as `fd`) ends with a whole batch: its last four
 * bytes give the last body's length, and a magic with that length stands where that batch must
 * begin. False for a file whose writer was killed mid-batch.
 *
 * @example
 * if (!spanFileEndsWhole(fd, fstatSync(fd).size)) renameSync(path, rotatedPath); // start a fresh file
 */
export function spanFileEndsWhole(fd: number, size: number): boolean {
  if (size === 0) return true;
  if (size < BATCH_HEADER_BYTES + 2 + TRAILER_BYTES) return false;
  const tail = Buffer.alloc(TRAILER_BYTES);
  if (readSync(fd, tail, 0, TRAILER_BYTES, size - TRAILER_BYTES) !== TRAILER_BYTES) return false;
  const length = tail.readUInt32LE(0);
  const start = size - TRAILER_BYTES - length - BATCH_HEADER_BYTES;
  if (start < 0) return false;
  const head = Buffer.alloc(BATCH_HEADER_BYTES);
  if (readSync(fd, head, 0, BATCH_HEADER_BYTES, start) !== BATCH_HEADER_BYTES) return false;
  return startsWithMagic(head, 0) && head.readUInt32LE(SPAN_BATCH_MAGIC.length) === length;
}

export function startsWithMagic(buffer: Buffer, at: number): boolean {
  return buffer.length - at >= SPAN_BATCH_MAGIC.length && buffer.compare(SPAN_BATCH_MAGIC, 0, SPAN_BATCH_MAGIC.length, at, at + SPAN_BATCH_MAGIC.length) === 0;
}
