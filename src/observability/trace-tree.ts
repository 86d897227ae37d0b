import { closeSync, existsSync, fstatSync, openSync, readdirSync, readSync } from "node:fs";
import { open, readdir, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { decodeSpansInto } from "./span-log-reader.ts";
import type { SpanEvent } from "./span-log.ts";

/** One handled message of a trace, as the event logs recorded it. */
export interface Span {
  span_id: string;
  parent_span_id?: string;
  actor: string;
  type: string;
  message_id: string;
  source?: string;
  started_at: number;
  duration_ms: number;
  status: string;
  error_code?: number;
  attempt?: number;
  label?: string;
  children: Span[];
}

/** How long one `findTrace` may read, unless told otherwise. */
const LOOKUP_TIMEOUT_MS = 5000;
/** Most spans one `findTrace` collects, unless told otherwise. */
const LOOKUP_MAX_SPANS = 10_000;
/** Bytes read from a log at a time; a longer line grows the buffer up to MAX_LINE_BYTES. */
const CHUNK_BYTES = 1024 * 1024;
/** A line longer than this is skipped (no event line comes near it). */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
const NEWLINE = 0x0a;

/** What `findTrace` found, and whether it stopped before reading everything. */
export interface TraceLookup {
  /** The spans as a forest, as `readTrace` returns them. */
  spans: Span[];
  /** True when the lookup stopped early (deadline, span limit or abort): `spans` is what it had by then. */
  truncated: boolean;
  /** Why it stopped early, e.g. "deadline of 5000 ms"; only when truncated. */
  reason?: string;
  /** Bytes of log read. */
  scannedBytes: number;
  elapsedMs: number;
}

/** Limits of one `findTrace`. */
export interface FindTraceOptions {
  /** Stop reading after this long and answer with what was found (truncated). Default 5000. */
  timeoutMs?: number;
  /** Stop after this many spans (truncated). Default 10,000. */
  maxSpans?: number;
  /** Stop when aborted, e.g. when the HTTP client went away (truncated). */
  signal?: AbortSignal;
}

/**
 * Reads every event log of a mesh (`<dir>/logs/*.jsonl` and the span files beside them,
 * `*.spans`; rotated files included) and returns
 * the spans of one trace as a forest: each handled message under the handler that sent it.
 * Redeliveries of one message (same span id) appear once per handling, in time order.
 * Synchronous, for the CLI and tests; a server uses `findTrace`, which never blocks its loop.
 *
 * @example
 * const roots = readTrace("/tmp/hermes-mesh-demo", "t7u8v9");
 * console.log(renderTrace("t7u8v9", roots));
 */
export function readTrace(dir: string, traceId: string): Span[] {
  const collector = new SpanCollector(traceId);
  let buffer: Buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  for (const path of logFiles(dir)) {
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch {
      continue; // rotated away since the listing
    }
    try {
      const scan = scanOf(path, fstatSync(fd).size);
      while (!scan.done) {
        buffer = scan.fit(buffer);
        const read = readSync(fd, buffer, 0, scan.want(buffer), scan.position);
        scan.take(buffer, read, collector);
      }
    } finally {
      closeSync(fd);
    }
  }
  return buildForest(collector.spans);
}

/**
 * `readTrace` for a server: reads the logs with asynchronous positional reads of 1 MiB, so the
 * event loop runs between chunks (each costs it a `Buffer.indexOf`, tens of microseconds), and
 * parses only the lines that contain the trace id. Bounded: past `timeoutMs` (default 5 s),
 * `maxSpans` (10,000) or an abort it answers with what it found and `truncated: true`. Each
 * file is read up to its size when the lookup reached it; lines appended later are not waited for.
 *
 * @example
 * const { spans, truncated } = await findTrace(dir, "t7u8v9", { timeoutMs: 2000, signal: request.signal });
 * console.log(renderTrace("t7u8v9", spans) + (truncated ? "\n(partial)" : ""));
 */
export async function findTrace(dir: string, traceId: string, options: FindTraceOptions = {}): Promise<TraceLookup> {
  const t0 = performance.now();
  const deadline = t0 + (options.timeoutMs ?? LOOKUP_TIMEOUT_MS);
  const maxSpans = options.maxSpans ?? LOOKUP_MAX_SPANS;
  const collector = new SpanCollector(traceId);
  let buffer: Buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let scannedBytes = 0;
  let reason: string | undefined;
  const stopReason = (): string | undefined => {
    if (options.signal?.aborted) return "aborted";
    if (collector.spans.length >= maxSpans) return `limit of ${maxSpans} spans`;
    if (performance.now() > deadline) return `deadline of ${Math.round(options.timeoutMs ?? LOOKUP_TIMEOUT_MS)} ms`;
    return undefined;
  };
  files: for (const path of await logFilesAsync(dir)) {
    let handle: FileHandle;
    try {
      handle = await open(path, "r");
    } catch {
      continue;
    }
    try {
      const scan = scanOf(path, (await handle.stat()).size);
      while (!scan.done) {
        if ((reason = stopReason())) break files;
        buffer = scan.fit(buffer);
        const { bytesRead } = await handle.read(buffer, 0, scan.want(buffer), scan.position);
        scannedBytes += bytesRead;
        scan.take(buffer, bytesRead, collector);
      }
    } finally {
      await handle.close();
    }
  }
  reason ??= collector.spans.length > maxSpans ? `limit of ${maxSpans} spans` : undefined;
  const spans = buildForest(collector.spans.slice(0, maxSpans));
  return { spans, truncated: reason !== undefined, ...(reason && { reason }), scannedBytes, elapsedMs: performance.now() - t0 };
}

/** The logs of a mesh, current files before rotated ones: a lookup that stops early has read the newer lines. */
function logFiles(dir: string): string[] {
  const logs = join(dir, "logs");
  if (!existsSync(logs)) return [];
  return orderLogs(readdirSync(logs)).map((f) => join(logs, f));
}

async function logFilesAsync(dir: string): Promise<string[]> {
  const logs = join(dir, "logs");
  try {
    return orderLogs(await readdir(logs)).map((f) => join(logs, f));
  } catch {
    return [];
  }
}

function orderLogs(names: string[]): string[] {
  const rotated = (f: string) => /\.\d+\.(jsonl|spans)$/.test(f);
  const logs = names.filter((f) => f.endsWith(".jsonl") || f.endsWith(".spans")).sort();
  return [...logs.filter((f) => !rotated(f)), ...logs.filter(rotated)];
}

/** How a file is read: JSON lines, or the binary records of a span file (span-log.ts). */
function scanOf(path: string, size: number): FileScan | SpanFileScan {
  return path.endsWith(".spans") ? new SpanFileScan(size) : new FileScan(size);
}

/**
 * The reading position in one file, read in chunks into one buffer: what a chunk ends with
 * unfinished is read again at the start of the next one, so no bytes are copied between
 * chunks; a unit (line or batch) longer than the buffer grows it, up to MAX_LINE_BYTES.
 */
abstract class ChunkedScan {
  position = 0;
  protected readonly size: number;
  protected grow = false;

  constructor(size: number) {
    this.size = size;
  }

  get done(): boolean {
    return this.position >= this.size;
  }

  /** The buffer to read into next: the same one, or a bigger one for a long unit. */
  fit(buffer: Buffer): Buffer {
    if (!this.grow) return buffer;
    this.grow = false;
    return Buffer.allocUnsafe(buffer.length * 2);
  }

  want(buffer: Buffer): number {
    return Math.min(buffer.length, this.size - this.position);
  }

  /** Hands what is whole among `read` bytes to the collector and moves past it. */
  abstract take(buffer: Buffer, read: number, collector: SpanCollector): void;
}

/** A JSON Lines file: whole lines only; a line past MAX_LINE_BYTES is skipped. */
class FileScan extends ChunkedScan {
  #skipping = false;

  /** Hands the whole lines among `read` bytes to the collector and moves past them. */
  take(buffer: Buffer, read: number, collector: SpanCollector): void {
    if (read <= 0) {
      this.position = this.size; // the file shrank (truncated by hand): nothing more to read
      return;
    }
    const view = buffer.subarray(0, read);
    if (this.#skipping) {
      // Past the end of the overlong line; the next read starts at the line after it.
      const newline = view.indexOf(NEWLINE);
      this.#skipping = newline === -1;
      this.position += newline === -1 ? read : newline + 1;
      return;
    }
    const final = this.position + read >= this.size;
    const end = final ? view.length : view.lastIndexOf(NEWLINE) + 1;
    if (end === 0 && !final) {
      // No newline in a whole buffer: a long line. Grow and read it again, or skip it.
      if (buffer.length * 2 <= MAX_LINE_BYTES) this.grow = true;
      else {
        this.#skipping = true;
        this.position += read;
      }
      return;
    }
    collector.scan(view.subarray(0, end));
    this.position += end;
  }
}

/**
 * The reading position in a span file: each chunk's whole batches are decoded (only those that
 * hold the trace id's bytes); an unfinished batch at a chunk's end is read again with the next
 * chunk, and one bigger than the buffer grows it.
 */
class SpanFileScan extends ChunkedScan {
  take(buffer: Buffer, read: number, collector: SpanCollector): void {
    if (read <= 0) {
      this.position = this.size;
      return;
    }
    const events: SpanEvent[] = [];
    const consumed = decodeSpansInto(buffer.subarray(0, read), events, collector.traceId);
    for (const event of events) collector.event(event);
    if (this.position + read >= this.size) this.position = this.size;
    else if (consumed > 0) this.position += consumed;
    else if (buffer.length * 2 <= MAX_LINE_BYTES) this.grow = true;
    else this.position += read; // a batch too big to hold: skipped
  }
}

/** Picks the lines of one trace out of raw log bytes and turns its `handled` lines into spans. */
class SpanCollector {
  readonly spans: Span[] = [];
  readonly traceId: string;
  /** The trace id as it appears in a line: a cheap byte search before any decoding or parsing. */
  readonly #needle: Buffer;
  /** Lines already taken: a file renamed by rotation while being read may be met twice. */
  readonly #seen = new Set<string>();

  constructor(traceId: string) {
    this.traceId = traceId;
    this.#needle = Buffer.from(JSON.stringify(traceId));
  }

  /** `bytes` holds whole lines (the last one may lack its newline). */
  scan(bytes: Buffer): void {
    for (let hit = bytes.indexOf(this.#needle); hit !== -1; ) {
      const start = bytes.lastIndexOf(NEWLINE, hit) + 1;
      const newline = bytes.indexOf(NEWLINE, hit);
      const stop = newline === -1 ? bytes.length : newline;
      this.#line(bytes.toString("utf8", start, stop));
      hit = stop >= bytes.length ? -1 : bytes.indexOf(this.#needle, stop + 1);
    }
  }

  #line(line: string): void {
    if (this.#seen.has(line)) return;
    this.#seen.add(line);
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line);
    } catch {
      return; // a torn last line of a killed process
    }
    this.#take(event);
  }

  /** A record of a span file, already decoded. */
  event(event: SpanEvent): void {
    // A file renamed by rotation while being read may be met twice: the same record says the same.
    const key = `${event.actor}|${event.span_id}|${event.ts}|${event.started_at}|${event.attempt}`;
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    this.#take(event);
  }

  #take(event: Record<string, unknown>): void {
    if (event.trace_id !== this.traceId || event.event !== "handled" || typeof event.span_id !== "string") return;
    this.spans.push({
      span_id: event.span_id,
      ...(typeof event.parent_span_id === "string" && { parent_span_id: event.parent_span_id }),
      actor: String(event.actor),
      type: String(event.type),
      message_id: String(event.message_id),
      ...(typeof event.source === "string" && { source: event.source }),
      started_at: Number(event.started_at),
      duration_ms: Number(event.duration_ms),
      status: String(event.status),
      ...(typeof event.error_code === "number" && { error_code: event.error_code }),
      ...(typeof event.attempt === "number" && { attempt: event.attempt }),
      ...(typeof event.label === "string" && { label: event.label }),
      children: [],
    });
  }
}

/** Links spans to their parents; spans whose parent is unknown become roots. */
export function buildForest(spans: Span[]): Span[] {
  spans.sort((a, b) => a.started_at - b.started_at);
  const byId = new Map<string, Span>();
  for (const span of spans) if (!byId.has(span.span_id)) byId.set(span.span_id, span);
  const roots: Span[] = [];
  for (const span of spans) {
    const parent = span.parent_span_id ? byId.get(span.parent_span_id) : undefined;
    if (parent && parent !== span) parent.children.push(span);
    else roots.push(span);
  }
  return roots;
}

/**
 * The forest as text: one line per span with its start offset from the first span, its
 * duration and outcome.
 *
 * @example
 * console.log(renderTrace("t7u8v9", readTrace(dir, "t7u8v9")));
 */
export function renderTrace(traceId: string, roots: Span[]): string {
  const all: Span[] = [];
  const collect = (s: Span) => {
    all.push(s);
    s.children.forEach(collect);
  };
  roots.forEach(collect);
  if (all.length === 0) return `trace ${traceId}: no spans found`;
  const start = Math.min(...all.map((s) => s.started_at));
  const end = Math.max(...all.map((s) => s.started_at + s.duration_ms));
  const actors = new Set(all.map((s) => s.actor));
  const lines = [`trace ${traceId}: ${all.length} span(s) in ${actors.size} actor(s), ${(end - start).toFixed(1)} ms`];
  const walk = (span: Span, prefix: string, last: boolean) => {
    const outcome = span.status === "ok" ? "ok" : `error ${span.error_code ?? ""}`.trim();
    const retry = span.attempt && span.attempt > 1 ? ` attempt ${span.attempt}` : "";
    lines.push(
      `${prefix}${last ? "└─ " : "├─ "}${span.actor}  ${span.label ?? span.type}  +${(span.started_at - start).toFixed(1)} ms  ${span.duration_ms.toFixed(1)} ms  ${outcome}${retry}`,
    );
    span.children.forEach((child, i) => walk(child, prefix + (last ? "   " : "│  "), i === span.children.length - 1));
  };
  roots.forEach((root, i) => walk(root, "", i === roots.length - 1));
  return lines.join("\n");
}
