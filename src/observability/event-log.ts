import { mkdirSync, renameSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type { FileSink } from "bun";

/** One line of an actor's event log. `event` names what happened; the rest depends on it. */
export interface LogEvent {
  event: "handled" | "sent" | "error" | "restart" | "started" | "stopped" | "tool_call" | "tool_result" | string;
  [field: string]: unknown;
}

const FLUSH_MS = 200;
/** Past this size the file is renamed to `<name>.1.jsonl` (one old file kept) and a new one starts. */
const ROTATE_BYTES = 64 * 1024 * 1024;

/**
 * An append-only JSON Lines file of events (one per mesh member under `<mesh dir>/logs/`),
 * written through a buffered sink and flushed every 200 ms and on exit, so logging stays off
 * the message path's critical cost. Rotates at 64 MiB keeping one previous file.
 *
 * @example
 * const log = new EventLog(`${dir}/logs/echo.jsonl`, { actor: "echo" });
 * log.write({ event: "handled", trace_id, message_id, duration_ms: 0.4 });
 */
export class EventLog {
  readonly path: string;
  #bound: Record<string, unknown>;
  #sink: FileSink;
  #bytes: number;
  #timer: ReturnType<typeof setInterval>;
  #closed = false;

  constructor(path: string, bound: Record<string, unknown> = {}) {
    this.path = path;
    this.#bound = bound;
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    this.#bytes = sizeOf(path);
    this.#sink = Bun.file(path).writer({ highWaterMark: 64 * 1024 });
    this.#timer = setInterval(() => this.flush(), FLUSH_MS);
    this.#timer.unref?.();
    process.once("exit", () => this.flush());
  }

  write(event: LogEvent): void {
    if (this.#closed) return;
    const line = `${JSON.stringify({ ts: Date.now(), ...this.#bound, ...event })}\n`;
    this.#sink.write(line);
    this.#bytes += line.length;
    if (this.#bytes > ROTATE_BYTES) this.#rotate();
  }

  flush(): void {
    if (!this.#closed) void this.#sink.flush();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#sink.end();
  }

  #rotate(): void {
    this.#sink.flush();
    this.#sink.end();
    renameSync(this.path, this.path.replace(/\.jsonl$/, ".1.jsonl"));
    this.#sink = Bun.file(this.path).writer({ highWaterMark: 64 * 1024 });
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
