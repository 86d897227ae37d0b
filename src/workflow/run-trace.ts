import { formatTraceparent, spanIdOf } from "../observability/trace-context.ts";
import type { WorkflowNode } from "./workflow-definition.ts";
import type { NodeRecord, RunRecord } from "./workflow-store.ts";

/** Writes one line to the orchestrator's JSON Lines event log. */
export type RecordEvent = (event: Record<string, unknown> & { event: string }) => void;

/**
 * A workflow node (one round of it) as a span of the run's trace. Its id is derived from the
 * run, the node and the round, so it is the same after a restart; the node's requests name it
 * as their parent, and it names the run's span (the run request's) as its own, so
 * `hermes-mesh trace <trace_id>` shows run → node → the actor that handled each attempt.
 *
 * @example
 * nodeSpanId("01J...", "caption", 2); // "5c0f..." (16 hex digits)
 */
export function nodeSpanId(runId: string, nodeId: string, round: number): string {
  return spanIdOf(`${runId}/${nodeId}/${round}`);
}

/**
 * The traceparent header of a node's requests.
 *
 * @example
 * nodeTraceparent(run, "image", 1); // "00-<trace>-<node span>-01"
 */
export function nodeTraceparent(run: Pick<RunRecord, "run_id" | "trace_id">, nodeId: string, round: number): string {
  return formatTraceparent(run.trace_id, nodeSpanId(run.run_id, nodeId, round));
}

/**
 * The "handled" line of a node span, written when a round of the node ends (succeeded, failed,
 * cancelled), in the event log format the trace command and dashboard read.
 *
 * @example
 * recordNodeSpan(ctx.record, run, node, record);
 */
export function recordNodeSpan(record: RecordEvent | undefined, run: RunRecord, node: WorkflowNode, state: NodeRecord, now = Date.now()): void {
  if (!record) return;
  const started = state.started_at ?? now;
  const route = node.route.capability !== undefined ? `capability:${node.route.capability}` : node.route.target_agent;
  const errorCode = typeof state.error?.error_code === "number" ? state.error.error_code : undefined;
  record({
    event: "handled",
    type: "workflow_node",
    label: `node ${node.id} → ${route}${state.round > 1 ? ` round ${state.round}` : ""} (${state.status})`,
    trace_id: run.trace_id,
    ...(state.message_id && { message_id: state.message_id }),
    span_id: nodeSpanId(run.run_id, node.id, state.round),
    parent_span_id: spanIdOf(run.run_id),
    run_id: run.run_id,
    node: node.id,
    started_at: started,
    duration_ms: Math.max(0, now - started),
    status: state.status === "succeeded" || state.status === "skipped" ? "ok" : "error",
    ...(errorCode !== undefined && { error_code: errorCode }),
    attempt: Math.max(1, state.attempt),
  });
}
