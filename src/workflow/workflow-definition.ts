import type { Route } from "../../mesh/envelope.ts";
import type { Mapping } from "./input-mapping.ts";
import type { PathSegment } from "./path-expression.ts";
import type { CompiledCondition } from "./when-condition.ts";
import type { WorkflowGraph } from "./workflow-graph.ts";
import type { RetryPolicy, WorkflowNodeSpec } from "./workflow-schema.ts";

/** A node ready to run: its route, compiled input mapping and conditions, and its role. */
export interface WorkflowNode {
  id: string;
  /** Index in the file's `nodes` list (for locating it in messages). */
  index: number;
  spec: WorkflowNodeSpec;
  /** Where its request goes: by capability (the scheduler picks) or to a target. */
  route: Route;
  /** The payload mapping; undefined means the default `{ input, results }`. */
  input: Mapping | undefined;
  when: CompiledCondition | undefined;
  retry: RetryPolicy;
  timeoutMs: number;
  ttlMs: number;
  onFailure: string | undefined;
  sendBack: { when: CompiledCondition; to: string[]; only: PathSegment[] | undefined; maxRounds: number } | undefined;
  /** Set on a failure-branch node: the node it stands in for, or "$flow" for the flow's on_failure. */
  handles: string | undefined;
}

/**
 * A validated workflow. `source` is the YAML text it came from: a run stores it, so resuming
 * after a crash runs exactly the definition the run started with.
 *
 * @example
 * const wf = loadWorkflow("actors/workflows/image-caption.yaml");
 * for (const id of wf.order) console.log(id, wf.nodes.get(id)!.route);
 */
export interface Workflow {
  name: string;
  version: string;
  description: string | undefined;
  file: string;
  source: string;
  nodes: Map<string, WorkflowNode>;
  /** Regular edges only; failure-branch nodes have none. */
  graph: WorkflowGraph;
  /** A topological order of every node (failure-branch nodes included, they are isolated). */
  order: string[];
  output: Mapping | undefined;
  onFailure: string | undefined;
  /** Line and column of a node's key (or the node) in the file, for messages found later (providers). */
  locate(nodeId: string, key?: string): { line: number; col: number };
}

/**
 * What a flow-level on_failure node stands in for (its `handles`).
 *
 * @example
 * workflow.nodes.get(workflow.onFailure!)!.handles === FLOW; // true
 */
export const FLOW = "$flow";
