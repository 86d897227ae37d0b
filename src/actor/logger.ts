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

const stderrSink: LogSink = (line) => process.stderr.write(`${line}\n`);

/**
 * A JSON Lines logger: `{"ts":...,"level":"info","actor":"echo","trace_id":"...","msg":"..."}`.
 *
 * @example
 * const log = createLogger({ actor: "echo" });
 * log.with({ trace_id: env.trace_id }).info("handled", { ms: 3 });
 */
export function createLogger(bound: Record<string, unknown>, sink: LogSink = stderrSink, minLevel: "debug" | "info" = "info"): Logger {
  const write = (level: string, message: string, fields?: Record<string, unknown>) => {
    if (level === "debug" && minLevel !== "debug") return;
    sink(JSON.stringify({ ts: new Date().toISOString(), level, ...bound, msg: message, ...fields }));
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    with: (fields) => createLogger({ ...bound, ...fields }, sink, minLevel),
  };
}
