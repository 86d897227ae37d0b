import { createRequest, type Envelope, type Payload } from "../../mesh/envelope.ts";
import { nodeTraceparent } from "./run-trace.ts";
import type { WorkflowNode } from "./workflow-definition.ts";
import type { RunRecord } from "./workflow-store.ts";

/**
 * The request envelope of one attempt of a node: from the orchestrator's link, routed by the
 * node's capability or target, in the run's trace and context, its span's child, with the
 * node's ttl. It is stored before it is sent, so it can be sent again unchanged.
 *
 * @example
 * const env = nodeRequest("orchestrator.wf", run, workflow.nodes.get("image")!, 1, { prompt: "a fox" });
 * env.capability; // "image_generation"
 */
export function nodeRequest(source: string, run: Pick<RunRecord, "run_id" | "trace_id" | "context_id">, node: WorkflowNode, round: number, payload: Payload): Envelope {
  const envelope = createRequest(source, node.route, payload, {
    trace_id: run.trace_id,
    context_id: run.context_id,
    ...(node.spec.priority !== undefined && { priority: node.spec.priority }),
    headers: { traceparent: nodeTraceparent(run, node.id, round) },
  });
  envelope.ttl = node.ttlMs;
  return envelope;
}

/**
 * A stored request as it goes out again after a restart: the same message_id (the receiver
 * deduplicates it, answering from its memory if it already ran), a fresh ttl, and the next
 * delivery attempt number (so the trace shows it was a redelivery).
 *
 * @example
 * const again = resentEnvelope(record.envelope, node.ttlMs); // again.message_id === record.message_id
 */
export function resentEnvelope(stored: Record<string, unknown>, ttlMs: number): Envelope {
  const envelope = { ...(stored as unknown as Envelope), ttl: ttlMs };
  envelope.attempt = (envelope.attempt ?? 1) + 1;
  delete envelope.seq;
  return envelope;
}
