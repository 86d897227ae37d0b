import { closeSync, mkdirSync, openSync, renameSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/** One line of an actor's event log. `event` names what happened; the rest depends on it. */
export interface LogEvent {
  event: "handled" | "sent" | "error" | "restart" | "started" | "stopped" | "tool_call" | "tool_result" | string;
  [field: string]: unknown;
}

const FLUSH_MS = 200;
/** Past this many buffered characters a flush happens at once. */
const FLUSH_CHARS = 256 * 1024;
/** Past this size the file is renamed to `<name>.1.jsonl` (one old file kept) and a new one starts. */
const ROTATE_BYTES = 64 * 1024 * 1024;

/**
 * An append-only JSON Lines file of events (one per mesh member under `<mesh dir>/logs/`).
 * Lines collect in memory and go to the file in one write every 200 ms (or past 256 K
 * characters, and on exit): a write per line, even through Bun's FileSink, cost about half a
 * microsecond each, which showed in every hop. Rotates at 64 MiB keeping one previous file.
 *
 * @example
 * const log = new EventLog(`${dir}/logs/echo.jsonl`, { actor: "echo" });
 * log.write({ event: "handled", trace_id, message_id, duration_ms: 0.4 });
 */
export class EventLog {
  readonly path: string;
  #bound: Record<string, unknown>;
  #boundFields: string;
  #fd: number;
  #lines: string[] = [];
  #pendingChars = 0;
  #bytes: number;
  #timer: ReturnType<typeof setInterval>;
  #closed = false;

  readonly rotateBytes: number;

  constructor(path: string, bound: Record<string, unknown> = {}, options: { rotateBytes?: number } = {}) {
    this.rotateBytes = options.rotateBytes ?? ROTATE_BYTES;
    this.path = path;
    this.#bound = bound;
    const inner = JSON.stringify(bound).slice(1, -1);
    this.#boundFields = inner ? `${inner},` : "";
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    this.#bytes = sizeOf(path);
    this.#fd = openSync(path, "a", 0o600);
    this.#timer = setInterval(() => this.flush(), FLUSH_MS);
    this.#timer.unref?.();
    process.once("exit", () => this.flush());
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
    this.#lines.push(line);
    this.#pendingChars += line.length;
    if (this.#pendingChars > FLUSH_CHARS) this.flush();
  }

  flush(): void {
    if (this.#closed || this.#lines.length === 0) return;
    const text = this.#lines.join("");
    this.#lines = [];
    this.#pendingChars = 0;
    const buffer = Buffer.from(text);
    let written = 0;
    while (written < buffer.length) written += writeSync(this.#fd, buffer, written);
    this.#bytes += buffer.length;
    if (this.#bytes > this.rotateBytes) this.#rotate();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.flush();
    this.#closed = true;
    clearInterval(this.#timer);
    closeSync(this.#fd);
  }

  #rotate(): void {
    closeSync(this.#fd);
    renameSync(this.path, this.path.replace(/\.jsonl$/, ".1.jsonl"));
    this.#fd = openSync(this.path, "a", 0o600);
    this.#bytes = 0;
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
