import type { Payload } from "../../mesh/envelope.ts";
import { resolvePath } from "./path-expression.ts";
import type { Workflow, WorkflowNode } from "./workflow-definition.ts";

/**
 * Which nodes run again when `node` sends the work back with `result`: the targets (its
 * `send_back.to`, narrowed by `only` when that lists some of them), everything between them and
 * `node`, `node` itself, and the failure branches of all of those (so a node failing again in
 * the new round has its stand-in again).
 *
 * @example
 * sendBackPlan(workflow, workflow.nodes.get("validate")!, { valid: false, failed: ["caption"] });
 * // { targets: ["caption"], reset: ["validate", "caption"] }
 */
export function sendBackPlan(workflow: Workflow, node: WorkflowNode, result: Payload): { targets: string[]; reset: string[] } {
  const sb = node.sendBack!;
  const listed = sb.only ? resolvePath({ result }, sb.only) : undefined;
  const chosen = Array.isArray(listed) ? sb.to.filter((id) => listed.includes(id)) : [];
  const targets = chosen.length > 0 ? chosen : sb.to;
  const between = workflow.graph.ancestors(node.id);
  const reset = new Set<string>([node.id]);
  for (const target of targets) {
    reset.add(target);
    for (const id of workflow.graph.descendants(target)) if (between.has(id)) reset.add(id);
  }
  for (const id of [...reset]) {
    for (let f = workflow.nodes.get(id)!.onFailure; f && !reset.has(f); f = workflow.nodes.get(f)!.onFailure) reset.add(f);
  }
  return { targets, reset: [...reset] };
}
