import { closeSync, existsSync, fstatSync, ftruncateSync, mkdirSync, openSync, readSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { createLogger, type Logger } from "../../mesh/logger.ts";

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
 * Test-only fault injection, read when a log is created: while the file this variable names
 * exists, every write of the log fails with ENOSPC, as on a full disk. The durable store reads
 * the same variable (src/actor/durable-store.ts). Never set it outside tests.
 */
const DISK_FULL_ENV = "HERMES_TEST_DISK_FULL";

/**
 * An append-only JSON Lines file of events (one per mesh member under `<mesh dir>/logs/`).
 * Lines collect in memory, encoded, and go to the file in one write 200 ms after the first (or past
 * 256 KiB, and on exit): a write per line, even through Bun's FileSink, cost about half a
 * microsecond each, which showed in every hop. Rotates at 64 MiB keeping one previous file.
 *
 * A log that cannot write (a full disk, a missing directory) never throws: the lines of a
 * failed write are dropped and counted (`dropped`), a batch is written whole or not at all,
 * and the first failure is warned about once. When writing works again the file gets a
 * `log_dropped` line with the count, and a warning says how many were lost; so does close()
 * while the log still cannot write.
 *
 * @example
 * const log = new EventLog(`${dir}/logs/echo.jsonl`, { actor: "echo" });
 * log.write({ event: "handled", trace_id, message_id, duration_ms: 0.4 });
 * if (log.dropped > 0) console.warn(`${log.dropped} event lines lost`);
 */
export class EventLog {
  readonly path: string;
  readonly rotateBytes: number;
  #bound: Record<string, unknown>;
  #boundFields: string;
  /** -1 while the file is not open (it could not be opened or reopened): the next flush tries again. */
  #fd = -1;
  #mode: number;
  /**
   * Lines not yet written, already encoded: a line becomes bytes as it is written, so its string
   * dies young (kept as strings until the flush, the lines of a busy actor outlived the young
   * generation and cost the collector more than building them).
   */
  #pending = Buffer.allocUnsafe(INITIAL_PENDING_BYTES);
  #pendingBytes = 0;
  #pendingLines = 0;
  #bytes = 0;
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
  /** The file ends mid-line (a cut-back that failed, a writer killed mid-write): the next write ends it first. */
  #torn = false;
  #simulatedFull: string | undefined;
  #onExit = () => this.#finish();

  constructor(path: string, bound: Record<string, unknown> = {}, options: EventLogOptions = {}) {
    this.rotateBytes = options.rotateBytes ?? ROTATE_BYTES;
    this.#mode = options.mode ?? 0o600;
    this.path = path;
    this.#bound = bound;
    const inner = JSON.stringify(bound).slice(1, -1);
    this.#boundFields = inner ? `${inner},` : "";
    this.#log = options.log ?? createLogger({ ...bound, component: "event-log" });
    this.#simulatedFull = process.env[DISK_FULL_ENV] || undefined;
    try {
      this.#open();
    } catch (error) {
      this.#failed(0, error);
    }
    process.once("exit", this.#onExit);
  }

  /** Lines lost since this log was created because they could not be written. */
  get dropped(): number {
    return this.#dropped;
  }

  write(event: LogEvent): void {
    if (this.#closed) return;
    this.#append(`${JSON.stringify({ ts: Date.now(), ...this.#bound, ...event })}\n`);
  }

  /**
   * Writes a line whose fields the caller already serialised: `fields` is the inside of a JSON
   * object (`"event":"handled",...`, no braces). For the per-message lines, where building an
   * object and stringifying it cost more than the rest of the hop.
   */
  writeFields(fields: string): void {
    if (this.#closed) return;
    this.#append(`{"ts":${Date.now()},${this.#boundFields}${fields}}\n`);
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
    if (this.#pendingBytes > FLUSH_BYTES) this.flush();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(this.#flushLater, FLUSH_MS);
      this.#timer.unref?.();
    }
  }

  /** Writes what is buffered, in one write. Never throws: a failed batch is dropped and counted. */
  flush(): void {
    if (this.#closed || this.#pendingLines === 0) return;
    const count = this.#pendingLines;
    const lines = this.#pending.subarray(0, this.#pendingBytes);
    // After an outage the file first says how much is missing, in the same write as what follows.
    const buffer = this.#outage ? Buffer.concat([Buffer.from(this.#gapLine(this.#outage)), lines]) : lines;
    // The buffer is reused once the (synchronous) write is done; one grown for a huge line is let go.
    this.#pendingBytes = 0;
    this.#pendingLines = 0;
    if (this.#pending.length > MAX_KEPT_PENDING_BYTES) this.#pending = Buffer.allocUnsafe(INITIAL_PENDING_BYTES);
    try {
      this.#writeWhole(buffer);
    } catch (error) {
      this.#failed(count, error);
      return;
    }
    if (this.#outage) this.#recovered(this.#outage);
    if (this.#bytes > this.rotateBytes) this.#rotate();
  }

  async close(): Promise<void> {
    this.#finish();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    process.off("exit", this.#onExit);
  }

  /** The last flush, then the file closes; an outage still going on is reported with its count. */
  #finish(): void {
    if (this.#closed) return;
    this.flush();
    this.#closed = true;
    if (this.#outage) {
      this.#log.warn("event log closed while it could not write", { path: this.path, dropped: this.#outage.dropped, dropped_total: this.#dropped, since: this.#outage.since, error: this.#outage.error });
    }
    this.#closeFd();
  }

  /**
   * Appends `buffer` completely or not at all: a write that fails part way (the disk filled
   * up mid-batch) is cut off again, so the file never holds half a line.
   */
  #writeWhole(buffer: Buffer): void {
    if (this.#fd < 0) this.#open();
    if (this.#simulatedFull !== undefined && existsSync(this.#simulatedFull)) throw simulatedEnospc();
    const start = fstatSync(this.#fd).size;
    const data = this.#torn ? Buffer.concat([NEWLINE, buffer]) : buffer;
    let written = 0;
    try {
      while (written < data.length) written += writeSync(this.#fd, data, written);
    } catch (error) {
      if (written > 0) this.#cutBack(start);
      throw error;
    }
    this.#torn = false;
    this.#bytes = start + data.length;
  }

  #cutBack(size: number): void {
    try {
      ftruncateSync(this.#fd, size);
    } catch {
      // Cannot even truncate: reopen before the next write, which then starts on a fresh line.
      this.#closeFd();
    }
  }

  #open(): void {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    // a+: appends, and reads the last byte to see whether the file ends mid-line.
    this.#fd = openSync(this.path, "a+", this.#mode);
    this.#bytes = fstatSync(this.#fd).size;
    this.#torn = this.#bytes > 0 && !endsWithNewline(this.#fd, this.#bytes);
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

  #rotate(): void {
    try {
      this.#closeFd();
      renameSync(this.path, this.path.replace(/\.jsonl$/, ".1.jsonl"));
      this.#open();
    } catch (error) {
      // The next flush opens the file again, wherever the rename left it.
      this.#closeFd();
      this.#failed(0, error);
    }
  }

  #closeFd(): void {
    if (this.#fd < 0) return;
    try {
      closeSync(this.#fd);
    } catch {
      // Already unusable: nothing more to lose.
    }
    this.#fd = -1;
  }
}

const NEWLINE = Buffer.from("\n");

function endsWithNewline(fd: number, size: number): boolean {
  const last = Buffer.alloc(1);
  return readSync(fd, last, 0, 1, size - 1) === 1 && last[0] === 0x0a;
}

function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === "string" && !message.startsWith(code) ? `${code}: ${message}` : message;
}

function simulatedEnospc(): Error {
  return Object.assign(new Error(`ENOSPC: no space left on device, write (simulated by ${DISK_FULL_ENV})`), { code: "ENOSPC", errno: -28, syscall: "write" });
}
