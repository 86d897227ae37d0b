import type { Envelope } from "../../mesh/envelope.ts";
import { createLogger, type Logger } from "../../mesh/logger.ts";
import { AppendOnlyFile, DISK_FULL_ENV } from "./append-only-file.ts";
import { SpanBatch, type HandledSpan } from "./span-log.ts";
import { parentSpanOf } from "./trace-context.ts";
export { rotatedPathOf } from "./append-only-file.ts";

/** One line of an actor's event log. `event` names what happened; the rest depends on it. */
export interface LogEvent {
  event: "handled" | "sent" | "error" | "restart" | "started" | "stopped" | "tool_call" | "tool_result" | "log_dropped" | string;
  [field: string]: unknown;
}

/**
 * Settings of an event log.
 *
 * @example
 * const log = new EventLog(path, { actor: "echo" }, { rotateBytes: 8 << 20, log: createLogger({ component: "echo" }) });
 */
export interface EventLogOptions {
  /** Past this size the file is renamed to `<name>.1.jsonl` and a new one starts. Default 64 MiB. */
  rotateBytes?: number;
  /** Where the log's own warnings go (it cannot write; it writes again). Default: JSON Lines on standard error. */
  log?: Logger;
  /** Mode of the file when this creates it. Default 0600; 0640 in a mesh shared with a group, whose gateway reads every member's log. */
  mode?: number;
}

const FLUSH_MS = 200;
/** Past this many buffered bytes a flush happens at once. */
const FLUSH_BYTES = 256 * 1024;
/** The buffer of pending lines starts this big and doubles as needed (an idle actor writes little). */
const INITIAL_PENDING_BYTES = 16 * 1024;
/** A buffer grown past this (for a line of megabytes) is not kept after its flush. */
const MAX_KEPT_PENDING_BYTES = 1024 * 1024;
/** Past this size the file is renamed to `<name>.1.jsonl` (one old file kept) and a new one starts. */
const ROTATE_BYTES = 64 * 1024 * 1024;

/**
 * An append-only log of events of one mesh member (under `<mesh dir>/logs/`), in two files: the
 * JSON Lines file it is named by (`echo.0.jsonl`: start, stop, errors, tool calls, anything
 * written with `write`), and beside it the binary records of every message handled or sent
 * (`echo.0.spans`, src/observability/span-log.ts: a JSON line per message cost an actor about a
 * third of its CPU per event). Readers (event-log-reader.ts, `hermes-mesh events`, the trace lookups)
 * give both back as the same event objects.
 *
 * What is written collects in memory, encoded, and goes to the files in one write each 200 ms
 * after the first (or past 256 KiB, and on exit). Each file rotates at 64 MiB keeping one
 * previous file (`.1.jsonl`, `.1.spans`).
 *
 * A log that cannot write (a full disk, a missing directory) never throws: the lines and
 * records of a failed write are dropped and counted (`dropped`), a batch is written whole or
 * not at all, and the first failure is warned about once. When writing works again the JSON
 * file gets a `log_dropped` line with the count, and a warning says how many were lost; so
 * does close() while the log still cannot write.
 *
 * @example
 * const log = new EventLog(`${dir}/logs/echo.jsonl`, { actor: "echo" });
 * log.write({ event: "started", pid: process.pid });
 * log.handled(envelope, startedAt, 0.4, 1, undefined); // to echo.spans
 * if (log.dropped > 0) console.warn(`${log.dropped} events lost`);
 */
export class EventLog {
  readonly path: string;
  /** The binary file of per-message records beside `path`. */
  readonly spansPath: string;
  readonly rotateBytes: number;
  #bound: Record<string, unknown>;
  #lines: AppendOnlyFile;
  #spanFile: AppendOnlyFile;
  /**
   * Lines not yet written, already encoded: a line becomes bytes as it is written, so its string
   * dies young (kept as strings until the flush, the lines of a busy actor outlived the young
   * generation and cost the collector more than building them).
   */
  #pending = Buffer.allocUnsafe(INITIAL_PENDING_BYTES);
  #pendingBytes = 0;
  #pendingLines = 0;
  /** Per-message records not yet written; made with the first one (a member that handles nothing never has one). */
  #spans: SpanBatch | undefined;
  #lastDestination: string | undefined;
  #lastDestinationJson = "[]";
  /** Armed by the first line after a flush: an idle log sets no timer and wakes nothing. */
  #timer: ReturnType<typeof setTimeout> | undefined;
  #flushLater = () => {
    this.#timer = undefined;
    this.flush();
  };
  #closed = false;
  #log: Logger;
  #dropped = 0;
  /** The writes failing now: since when, how many lines lost since, the first error. */
  #outage: { since: number; dropped: number; error: string } | undefined;
  #onExit = () => this.#finish();

  constructor(path: string, bound: Record<string, unknown> = {}, options: EventLogOptions = {}) {
    this.rotateBytes = options.rotateBytes ?? ROTATE_BYTES;
    const mode = options.mode ?? 0o600;
    this.path = path;
    this.spansPath = spansPathOf(path);
    this.#bound = bound;
    this.#log = options.log ?? createLogger({ ...bound, component: "event-log" });
    const simulatedFull = process.env[DISK_FULL_ENV] || undefined;
    this.#lines = new AppendOnlyFile(path, mode, "lines", simulatedFull);
    this.#spanFile = new AppendOnlyFile(this.spansPath, mode, "batches", simulatedFull);
    try {
      this.#lines.open();
    } catch (error) {
      this.#failed(0, error);
    }
    process.once("exit", this.#onExit);
  }

  /** Lines and records lost since this log was created because they could not be written. */
  get dropped(): number {
    return this.#dropped;
  }

  write(event: LogEvent): void {
    if (this.#closed) return;
    this.#append(`${JSON.stringify({ ts: Date.now(), ...this.#bound, ...event })}\n`);
  }

  /**
   * The `handled` record of one message (to the span file): when it started (ms since the
   * epoch), how long it took (ms), its attempt and its error code if it failed; the span that
   * caused it is read from its headers. `now`, the record's time, when the caller has read the
   * clock already.
   */
  handled(env: Envelope, startedAt: number, durationMs: number, attempt: number, errorCode: number | undefined, now = Date.now()): void {
    if (this.#closed) return;
    const spans = this.#spanBatch();
    spans.handled(env, startedAt, durationMs, attempt, errorCode, parentSpanOf(env.headers), now);
    this.#wrote(spans.bytes);
  }

  /** The `handled` record of a handling named by a span id of its own (the gateway's span of an HTTP request). */
  handledSpan(span: HandledSpan): void {
    if (this.#closed) return;
    const spans = this.#spanBatch();
    spans.handledSpan(span);
    this.#wrote(spans.bytes);
  }

  /** The `sent` record of a message routed to `destinations` (its parent span read from its headers). */
  sent(env: Envelope, destinations: readonly string[]): void {
    if (this.#closed) return;
    const spans = this.#spanBatch();
    spans.sent(env, this.#destinationsJson(destinations), parentSpanOf(env.headers));
    this.#wrote(spans.bytes);
  }

  /** The JSON of `destinations`; for one destination, the same as the last message's is not built again. */
  #destinationsJson(destinations: readonly string[]): string {
    if (destinations.length !== 1) return JSON.stringify(destinations);
    if (destinations[0] !== this.#lastDestination) {
      this.#lastDestination = destinations[0];
      this.#lastDestinationJson = JSON.stringify(destinations);
    }
    return this.#lastDestinationJson;
  }

  /** The batch records are written into, made with the first one. */
  #spanBatch(): SpanBatch {
    return (this.#spans ??= new SpanBatch(JSON.stringify(this.#bound)));
  }

  #append(line: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const room = this.#pendingBytes + line.length * 3;
    if (room > this.#pending.length) {
      const grown = Buffer.allocUnsafe(Math.max(room, this.#pending.length * 2));
      this.#pending.copy(grown, 0, 0, this.#pendingBytes);
      this.#pending = grown;
    }
    this.#pendingBytes += this.#pending.write(line, this.#pendingBytes);
    this.#pendingLines++;
    this.#wrote(this.#pendingBytes);
  }

  /** Something was buffered, `bytes` now in its buffer: flush at once past 256 KiB, else within 200 ms. */
  #wrote(bytes: number): void {
    if (bytes > FLUSH_BYTES) this.flush();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(this.#flushLater, FLUSH_MS);
      this.#timer.unref?.();
    }
  }

  /** Writes what is buffered, in one write per file. Never throws: a failed batch is dropped and counted. */
  flush(): void {
    if (this.#closed) return;
    let failure: { error: unknown } | undefined;
    let lost = 0;
    const records = this.#spans?.count ?? 0;
    if (records > 0) {
      const batch = this.#spans!.take();
      try {
        this.#spanFile.writeWhole(batch);
      } catch (error) {
        failure = { error };
        lost += records;
      }
      this.#spans!.reset(MAX_KEPT_PENDING_BYTES);
    }
    // After an outage the JSON file first says how much is missing, in the same write as what follows.
    const gap = this.#outage && !failure;
    if (this.#pendingLines > 0 || gap) {
      const count = this.#pendingLines;
      const lines = this.#pending.subarray(0, this.#pendingBytes);
      const buffer = gap ? Buffer.concat([Buffer.from(this.#gapLine(this.#outage!)), lines]) : lines;
      // The buffer is reused once the (synchronous) write is done; one grown for a huge line is let go.
      this.#pendingBytes = 0;
      this.#pendingLines = 0;
      if (this.#pending.length > MAX_KEPT_PENDING_BYTES) this.#pending = Buffer.allocUnsafe(INITIAL_PENDING_BYTES);
      try {
        this.#lines.writeWhole(buffer);
      } catch (error) {
        failure ??= { error };
        lost += count;
      }
    }
    if (failure) {
      this.#failed(lost, failure.error);
      return;
    }
    if (this.#outage) this.#recovered(this.#outage);
    for (const file of [this.#lines, this.#spanFile]) {
      if (file.bytes > this.rotateBytes && !file.rotate()) this.#failed(0, file.lastError);
    }
  }

  async close(): Promise<void> {
    this.#finish();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    process.off("exit", this.#onExit);
  }

  /** The last flush, then the files close; an outage still going on is reported with its count. */
  #finish(): void {
    if (this.#closed) return;
    this.flush();
    this.#closed = true;
    if (this.#outage) {
      this.#log.warn("event log closed while it could not write", { path: this.path, dropped: this.#outage.dropped, dropped_total: this.#dropped, since: this.#outage.since, error: this.#outage.error });
    }
    this.#lines.closeFd();
    this.#spanFile.closeFd();
  }

  #failed(count: number, error: unknown): void {
    this.#dropped += count;
    if (this.#outage) {
      this.#outage.dropped += count;
      return;
    }
    const reason = reasonOf(error);
    this.#outage = { since: Date.now(), dropped: count, error: reason };
    this.#log.warn("event log cannot write: dropping lines until it can", { path: this.path, error: reason });
  }

  #recovered(outage: { since: number; dropped: number; error: string }): void {
    this.#outage = undefined;
    this.#log.warn("event log writing again", { path: this.path, dropped: outage.dropped, dropped_total: this.#dropped, since: outage.since, error: outage.error });
  }

  #gapLine(outage: { since: number; dropped: number; error: string }): string {
    return `${JSON.stringify({ ts: Date.now(), ...this.#bound, event: "log_dropped", dropped: outage.dropped, since: outage.since, error: outage.error })}\n`;
  }
}

/**
 * The span file beside a JSON Lines log: `echo.0.jsonl` -> `echo.0.spans`.
 *
 * @example
 * spansPathOf("/tmp/m/logs/echo.0.jsonl"); // "/tmp/m/logs/echo.0.spans"
 */
export function spansPathOf(path: string): string {
  return `${path.replace(/\.jsonl$/, "")}.spans`;
}

function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === "string" && !message.startsWith(code) ? `${code}: ${message}` : message;
}
