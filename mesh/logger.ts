
/** Structured log lines (JSON Lines), bound to an actor and, inside a handler, to a trace. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger adding these fields to every line (trace_id, message_id, ...). */
  with(fields: Record<string, unknown>): Logger;
}

/** Where log lines go: one JSON object per line. Default: standard error. */
export type LogSink = (line: string) => void;

/** Lines standard error refused (a full disk under `2> file`) since the last line it took. */
let stderrDropped = 0;
let stderrGuarded = false;
const countStderrFailure = (error: Error | null | undefined) => {
  if (error) stderrDropped++;
};

/**
 * Standard error, which a full disk (`2> file`) must not turn into a crash: a stream with no
 * "error" listener throws its error as an uncaught exception. Failed lines are counted, and the
 * next line starts afresh and says how many went missing (`dropped_lines`).
 */
const stderrSink: LogSink = (line) => {
  if (!stderrGuarded) {
    stderrGuarded = true;
    process.stderr.on("error", () => {});
  }
  let text = line;
  if (stderrDropped > 0 && line.startsWith("{")) {
    // A fresh line first: the write that failed may have written half of its line.
    text = `\n{"dropped_lines":${stderrDropped},${line.slice(1)}`;
    stderrDropped = 0;
  }
  process.stderr.write(`${text}\n`, countStderrFailure);
};

/**
 * A JSON Lines logger: `{"ts":...,"level":"info","actor":"echo","trace_id":"...","msg":"..."}`.
 * Logging never throws: fields that cannot be serialised are replaced by a note, and a sink
 * that throws loses the line, not the caller.
 *
 * @example
 * const log = createLogger({ actor: "echo" });
 * log.with({ trace_id: env.trace_id }).info("handled", { ms: 3 });
 */
export function createLogger(bound: Record<string, unknown>, sink: LogSink = stderrSink, minLevel: "debug" | "info" = "info"): Logger {
  const write = (level: string, message: string, fields?: Record<string, unknown>) => {
    if (level === "debug" && minLevel !== "debug") return;
    const ts = new Date().toISOString();
    let line: string;
    try {
      line = JSON.stringify({ ts, level, ...bound, msg: message, ...fields });
    } catch (error) {
      // A circular or BigInt field: the line still says what happened.
      line = JSON.stringify({ ts, level, msg: message, log_error: `fields not serialisable: ${String(error)}` });
    }
    try {
      sink(line);
    } catch {
      // The sink could not take it (closed pipe, full disk): the line is lost, the caller goes on.
    }
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    with: (fields) => createLogger({ ...bound, ...fields }, sink, minLevel),
  };
}
