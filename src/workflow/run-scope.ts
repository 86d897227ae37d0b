import { applyMapping } from "./input-mapping.ts";
import { FLOW, type Workflow, type WorkflowNode } from "./workflow-definition.ts";
import { NodeStatus, type NodeRecord, type RunRecord } from "./workflow-store.ts";

/** Where a node stands for the nodes after it. */
export type Settled = "ok" | "skipped" | "failed" | "waiting";

/**
 * How a node counts downstream: `ok` when it succeeded, or failed and its on_failure node
 * succeeded in its place; `skipped`; `failed` when nothing stood in for it; else `waiting`.
 *
 * @example
 * settledOf(workflow, nodes, "image"); // "ok"
 */
export function settledOf(workflow: Workflow, nodes: ReadonlyMap<string, NodeRecord>, id: string): Settled {
  const record = nodes.get(id)!;
  switch (record.status) {
    case NodeStatus.SUCCEEDED:
      return "ok";
    case NodeStatus.SKIPPED:
      return "skipped";
    case NodeStatus.CANCELLED:
      return "failed";
    case NodeStatus.FAILED: {
      const fallback = workflow.nodes.get(id)!.onFailure;
      if (!fallback) return "failed";
      const settled = settledOf(workflow, nodes, fallback);
      return settled === "skipped" ? "failed" : settled;
    }
    default:
      return "waiting";
  }
}

/**
 * A node's result as later nodes see it: its own, or its stand-in's when it failed.
 *
 * @example
 * effectiveResult(workflow, nodes, "image"); // the placeholder's answer when image failed
 */
export function effectiveResult(workflow: Workflow, nodes: ReadonlyMap<string, NodeRecord>, id: string): unknown {
  const record = nodes.get(id)!;
  if (record.status === NodeStatus.SUCCEEDED) return record.result ?? undefined;
  const fallback = workflow.nodes.get(id)!.onFailure;
  if (record.status === NodeStatus.FAILED && fallback) return effectiveResult(workflow, nodes, fallback);
  return undefined;
}

/**
 * The data paths read while preparing `node`: `$.input`, `$.run`, `$.nodes.<id>`,
 * `$.feedback`, `$.round`, and `$.error` in a failure-branch node.
 *
 * @example
 * nodeScope(workflow, run, nodes, workflow.nodes.get("validate")!).nodes.image.result;
 */
export function nodeScope(workflow: Workflow, run: RunRecord, nodes: ReadonlyMap<string, NodeRecord>, node?: WorkflowNode): Record<string, unknown> & { nodes: Record<string, unknown> } {
  const view: Record<string, unknown> = {};
  for (const [id, record] of nodes) {
    view[id] = { status: record.status, result: effectiveResult(workflow, nodes, id), error: record.error ?? undefined, attempts: record.attempt, round: record.round };
  }
  const own = node ? nodes.get(node.id) : undefined;
  const handled = node?.handles;
  const error = handled === FLOW ? (run.error ?? undefined) : handled ? (nodes.get(handled)?.error ?? undefined) : undefined;
  return {
    input: run.input,
    run: { id: run.run_id, trace_id: run.trace_id, context_id: run.context_id, workflow: run.workflow, version: run.version },
    nodes: view,
    round: own?.round ?? 1,
    ...(own?.feedback != null && { feedback: own.feedback }),
    ...(error !== undefined && { error }),
  };
}

/**
 * The payload of a node's request: its `input` mapping applied, or by default
 * `{ input, results: { <upstream id>: result } }` (plus `feedback` and `error` when set).
 *
 * @example
 * nodePayload(workflow, run, nodes, workflow.nodes.get("caption")!); // { prompt: "a red fox" }
 */
export function nodePayload(workflow: Workflow, run: RunRecord, nodes: ReadonlyMap<string, NodeRecord>, node: WorkflowNode): unknown {
  const scope = nodeScope(workflow, run, nodes, node);
  if (node.input) return applyMapping(node.input, scope);
  const results: Record<string, unknown> = {};
  for (const id of workflow.graph.upstream(node.id)) results[id] = effectiveResult(workflow, nodes, id);
  return {
    input: run.input,
    ...(workflow.graph.upstream(node.id).length > 0 && { results }),
    ...(scope.feedback !== undefined && { feedback: scope.feedback }),
    ...(scope.error !== undefined && { error: scope.error }),
  };
}

/**
 * A finished run's answer: the workflow's `output` mapping, or every regular node's result by id.
 *
 * @example
 * runOutput(workflow, run, nodes); // { image: {...}, caption: {...}, validate: {...} }
 */
export function runOutput(workflow: Workflow, run: RunRecord, nodes: ReadonlyMap<string, NodeRecord>): unknown {
  if (workflow.output) return applyMapping(workflow.output, nodeScope(workflow, run, nodes));
  const out: Record<string, unknown> = {};
  for (const node of workflow.nodes.values()) {
    if (node.handles) continue;
    const result = effectiveResult(workflow, nodes, node.id);
    if (result !== undefined) out[node.id] = result;
  }
  return out;
}
