import { Buffer } from "node:buffer";
import { BATCH_HEADER_BYTES, Flag, Kind, MAX_BATCH_BYTES, NO_NUMBER, SPAN_BATCH_MAGIC, startsWithMagic, TRAILER_BYTES, type SpanEvent } from "./span-log.ts";
import { spanIdOf } from "./trace-context.ts";

// The reading side of the span files (their layout: span-log.ts): records back into the objects their JSON lines were.

/**
 * Every record of span-log bytes as the event it stands for, the same object a JSON line of it
 * would parse to (`{ ts, actor, event: "handled", type, trace_id, message_id, span_id, … }`), in
 * file order. A batch cut short by a killed process, or bytes that are no batch, are skipped.
 * `traceId`: only the records of that trace (a byte search decides which batches to decode).
 *
 * @example
 * for (const event of decodeSpans(readFileSync("/tmp/hermes-mesh-demo/logs/echo.0.spans"))) console.log(JSON.stringify(event));
 */
export function decodeSpans(bytes: Uint8Array, traceId?: string): SpanEvent[] {
  const events: SpanEvent[] = [];
  decodeSpansInto(bytes, events, traceId);
  return events;
}

/**
 * `decodeSpans` into `into`, for reading a file in chunks: returns how many bytes were gone
 * through (whole batches and skipped garbage, not an unfinished batch at the end, which a live
 * writer may be completing or the next chunk holds). With `traceId`, batches that do not
 * contain its bytes are skipped undecoded.
 */
export function decodeSpansInto(bytes: Uint8Array, into: SpanEvent[], traceId?: string): number {
  return forEachBatch(bytes, (records, bound) => decodeBatch(records, bound, into, traceId), traceId);
}

/** Calls `take` with each whole batch's records and bound fields, batch after batch by their lengths; returns the bytes gone through (see decodeSpansInto). */
function forEachBatch(bytes: Uint8Array, take: (records: Buffer, bound: Record<string, unknown>) => void, traceId?: string): number {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const needle = traceId === undefined ? undefined : Buffer.from(traceId);
  let at = 0;
  let consumed = 0;
  while (at + BATCH_HEADER_BYTES + 2 <= buffer.length) {
    const length = buffer.readUInt32LE(at + SPAN_BATCH_MAGIC.length);
    const end = at + BATCH_HEADER_BYTES + length + TRAILER_BYTES;
    const plausible = startsWithMagic(buffer, at) && length >= 2 && length <= MAX_BATCH_BYTES;
    if (plausible && end > buffer.length) break; // unfinished: a live writer's batch, or the rest is in the next chunk
    const recordsStart = at + BATCH_HEADER_BYTES + 2 + buffer.readUInt16LE(at + BATCH_HEADER_BYTES);
    const recordsEnd = end - TRAILER_BYTES;
    if (!plausible || recordsStart > recordsEnd || buffer.readUInt32LE(recordsEnd) !== length) {
      // No batch here: damaged bytes. The next magic is where reading goes on.
      const next = buffer.indexOf(SPAN_BATCH_MAGIC, at + 1);
      if (next === -1) return Math.max(consumed, buffer.length - SPAN_BATCH_MAGIC.length + 1);
      at = consumed = next;
      continue;
    }
    // The trace id is looked for within this batch only: a search to the chunk's end per batch made a lookup quadratic.
    if (needle === undefined || buffer.subarray(recordsStart, recordsEnd).indexOf(needle) !== -1) {
      take(buffer.subarray(recordsStart, recordsEnd), parseBound(buffer.toString("utf8", at + BATCH_HEADER_BYTES + 2, recordsStart)));
    }
    at = consumed = end;
  }
  return consumed;
}

function parseBound(json: string): Record<string, unknown> {
  try {
    const value = JSON.parse(json);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

/** Decodes the records of one batch; a record that does not fit its batch ends the batch's decoding. */
function decodeBatch(records: Buffer, bound: Record<string, unknown>, into: SpanEvent[], traceId: string | undefined): void {
  let at = 0;
  while (at + 14 <= records.length) {
    const length = records.readUInt32LE(at);
    const end = at + 4 + length;
    if (length < 10 || end > records.length) return;
    const event = decodeRecord(records, at + 4, end, bound);
    if (event && (traceId === undefined || event.trace_id === traceId)) into.push(event);
    at = end;
  }
}

/** One record (kind at `at`), or undefined when it is malformed or of a kind this version does not know. */
function decodeRecord(b: Buffer, at: number, end: number, bound: Record<string, unknown>): SpanEvent | undefined {
  const kind = b[at]!;
  const flags = b[at + 1]!;
  const ts = b.readDoubleLE(at + 2);
  const reader = new StringReader(b, at + 10, end);
  try {
    if (kind === Kind.HANDLED) {
      if (at + 10 + 24 > end) return undefined;
      const startedAt = b.readDoubleLE(at + 10);
      const duration = b.readDoubleLE(at + 18);
      const attempt = b.readUInt32LE(at + 26);
      const errorCode = b.readInt32LE(at + 30);
      reader.at = at + 34;
      const type = reader.next();
      const traceOwn = flags & Flag.TRACE_IS_MESSAGE ? undefined : reader.next();
      const messageId = reader.next();
      const source = reader.next();
      const spanId = flags & Flag.SPAN_ID ? reader.next() : spanIdOf(messageId);
      const parent = flags & Flag.PARENT ? reader.next() : undefined;
      const topic = flags & Flag.TOPIC ? reader.next() : undefined;
      const capability = flags & Flag.CAPABILITY ? reader.next() : undefined;
      const label = flags & Flag.LABEL ? reader.next() : undefined;
      // Field order as the JSON lines had it.
      const event: SpanEvent = { ts, ...bound, event: "handled", type };
      if (label !== undefined) event.label = label;
      event.trace_id = traceOwn ?? messageId;
      if (messageId !== "") event.message_id = messageId;
      event.span_id = spanId;
      if (parent !== undefined) event.parent_span_id = parent;
      if (source !== "") event.source = source;
      if (topic !== undefined) event.topic = topic;
      if (capability !== undefined) event.capability = capability;
      if (attempt > 0) event.attempt = attempt;
      event.started_at = startedAt;
      event.duration_ms = Math.round(duration * 1000) / 1000;
      event.status = flags & Flag.ERROR ? "error" : "ok";
      if (flags & Flag.ERROR) event.error_code = errorCode === NO_NUMBER ? null : errorCode;
      return event;
    }
    if (kind === Kind.SENT) {
      const type = reader.next();
      const traceOwn = flags & Flag.TRACE_IS_MESSAGE ? undefined : reader.next();
      const messageId = reader.next();
      const to = parseTo(reader.next());
      const parent = flags & Flag.PARENT ? reader.next() : undefined;
      const topic = flags & Flag.TOPIC ? reader.next() : undefined;
      const capability = flags & Flag.CAPABILITY ? reader.next() : undefined;
      const correlation = flags & Flag.CORRELATION ? reader.next() : undefined;
      const event: SpanEvent = { ts, ...bound, event: "sent", type, trace_id: traceOwn ?? messageId, message_id: messageId };
      if (parent !== undefined) event.parent_span_id = parent;
      event.to = to;
      if (topic !== undefined) event.topic = topic;
      if (capability !== undefined) event.capability = capability;
      if (correlation !== undefined) event.correlation_id = correlation;
      return event;
    }
  } catch {
    return undefined; // a string running past its record
  }
  return undefined;
}

function parseTo(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return [];
  }
}

/** Reads the length-prefixed strings of one record, never past its end. */
class StringReader {
  constructor(
    readonly bytes: Buffer,
    public at: number,
    readonly end: number,
  ) {}

  next(): string {
    if (this.at + 4 > this.end) throw new RangeError("record ends early");
    const length = this.bytes.readUInt32LE(this.at);
    const start = this.at + 4;
    if (start + length > this.end) throw new RangeError("string runs past its record");
    this.at = start + length;
    return this.bytes.toString("utf8", start, start + length);
  }
}
