import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

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

/**
 * Reads every event log of a mesh (`<dir>/logs/*.jsonl`, rotated files included) and returns
 * the spans of one trace as a forest: each handled message under the handler that sent it.
 * Redeliveries of one message (same span id) appear once per handling, in time order.
 */
export function readTrace(dir: string, traceId: string): Span[] {
  const logs = join(dir, "logs");
  if (!existsSync(logs)) return [];
  const spans: Span[] = [];
  const needle = JSON.stringify(traceId);
  for (const file of readdirSync(logs).filter((f) => f.endsWith(".jsonl")).sort()) {
    for (const line of readFileSync(join(logs, file), "utf8").split("\n")) {
      // A cheap filter before parsing: most lines belong to other traces.
      if (!line.includes(needle)) continue;
      let event: Record<string, unknown>;
      try {
        event = JSON.parse(line);
      } catch {
        continue; // a torn last line of a killed process
      }
      if (event.trace_id !== traceId || event.event !== "handled" || typeof event.span_id !== "string") continue;
      spans.push({
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
  return buildForest(spans);
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
