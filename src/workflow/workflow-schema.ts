import { z } from "zod";

// Every leaf says what it expects; the loader adds what it got and where (file:line:col).
const expected = (what: string) => ({ error: `expected ${what}` });
const intIn = (min: number, max: number) => {
  const message = expected(`an integer from ${min} to ${max}`);
  return z.int(message).min(min, message).max(max, message);
};
const strictMap = <S extends z.core.$ZodLooseShape>(shape: S) =>
  z.strictObject(shape, {
    error: (issue: z.core.$ZodRawIssue) =>
      issue.code === "unrecognized_keys" ? `unknown key (expected one of: ${Object.keys(shape).join(", ")})` : "expected a map",
  });
const list = <T extends z.ZodType>(item: T) => z.array(item, expected("a list"));

/**
 * Node ids: also how paths name them (`$.nodes.<id>`), hence the identifier shape.
 *
 * @example
 * NodeId.safeParse("validate-2").success; // true
 */
export const NodeId = z.string(expected("a node id")).regex(/^[A-Za-z_][A-Za-z0-9_-]*$/, expected("a node id matching [A-Za-z_][A-Za-z0-9_-]*"));
const Capability = z.string(expected("a capability name")).regex(/^[A-Za-z0-9_.:/-]+$/, expected("a capability name of [A-Za-z0-9_.:/-]"));
const Target = z.string(expected("an actor name or address")).min(1, expected("an actor name or address"));
const Expression = z.string(expected("a condition (text)")).min(1, expected("a condition (text)"));

/**
 * Retries of a failed attempt: a count, or `{ max, backoff_ms, factor, max_backoff_ms }`.
 * The wait before retry n is `backoff_ms * factor^(n-1)`, capped at `max_backoff_ms`.
 *
 * @example
 * RetriesSchema.parse(2); // 2
 */
export const RetriesSchema = z.union(
  [
    intIn(0, 20),
    strictMap({
      max: intIn(0, 20),
      backoff_ms: intIn(0, 600_000).default(100),
      factor: z.number(expected("a number from 1 to 10")).min(1, expected("a number from 1 to 10")).max(10, expected("a number from 1 to 10")).default(2),
      max_backoff_ms: intIn(0, 3_600_000).default(10_000),
    }),
  ],
  expected("a retry count or a map { max, backoff_ms, factor, max_backoff_ms }"),
);

/**
 * Sending work back: when this node's result satisfies `when` (with `$.result` bound to it),
 * the nodes in `to` (ancestors of this node) run again with `$.feedback` set to this result,
 * then everything between them and this node; at most `max_rounds` rounds in all, after which
 * this node fails. `only`, a path into the result, narrows `to` to the ids it lists.
 *
 * @example
 * SendBackSchema.parse({ when: "$.result.valid == false", to: ["caption"] }).max_rounds; // 2
 */
export const SendBackSchema = strictMap({
  when: Expression,
  to: list(NodeId).min(1, expected("at least one node id")),
  only: z.string(expected("a path such as $.result.failed")).optional(),
  max_rounds: intIn(1, 20).default(2),
});

/**
 * One step of a workflow: a request routed by `capability` (the scheduler picks an instance) or
 * sent to `target` (an actor name or address).
 *
 * @example
 * WorkflowNodeSchema.parse({ id: "image", capability: "image_generation" }).timeout_ms; // 30000
 */
export const WorkflowNodeSchema = strictMap({
  id: NodeId,
  description: z.string(expected("text")).optional(),
  capability: Capability.optional(),
  target: Target.optional(),
  input: z.unknown().optional(),
  timeout_ms: intIn(1, 86_400_000).default(30_000),
  ttl_ms: intIn(1, 86_400_000).optional(),
  retries: RetriesSchema.default(0),
  priority: intIn(0, 9).optional(),
  when: Expression.optional(),
  on_failure: NodeId.optional(),
  send_back: SendBackSchema.optional(),
});

/**
 * An edge: `to` starts after `from` finished.
 *
 * @example
 * WorkflowEdgeSchema.parse({ from: "image", to: "validate" });
 */
export const WorkflowEdgeSchema = strictMap({ from: NodeId, to: NodeId });

/**
 * A workflow file. `output` maps the run's answer (default: every node's result by id);
 * `on_failure` names the node to run when the run fails.
 *
 * @example
 * WorkflowFileSchema.parse({ name: "hello", version: 1, nodes: [{ id: "a", capability: "echo" }] });
 */
export const WorkflowFileSchema = strictMap({
  name: z.string(expected("a workflow name")).regex(/^[a-z0-9][a-z0-9_.-]*$/, expected("a workflow name matching [a-z0-9][a-z0-9_.-]*")),
  version: z.union([z.string(), z.number()], expected("a version (number or text)")),
  description: z.string(expected("text")).optional(),
  nodes: list(WorkflowNodeSchema).min(1, expected("at least one node")),
  edges: list(WorkflowEdgeSchema).default(() => []),
  on_failure: NodeId.optional(),
  output: z.unknown().optional(),
});

/** A workflow file as loaded and validated (nodes, edges, output), the input of the engine. */
export type WorkflowFile = z.output<typeof WorkflowFileSchema>;
export type WorkflowNodeSpec = z.output<typeof WorkflowNodeSchema>;
export type RetryPolicy = { max: number; backoff_ms: number; factor: number; max_backoff_ms: number };

/**
 * The retry policy of a node, the count form expanded.
 *
 * @example
 * retryPolicy(2); // { max: 2, backoff_ms: 100, factor: 2, max_backoff_ms: 10000 }
 */
export function retryPolicy(retries: WorkflowNodeSpec["retries"]): RetryPolicy {
  return typeof retries === "number" ? { max: retries, backoff_ms: 100, factor: 2, max_backoff_ms: 10_000 } : retries;
}

/**
 * The wait before retry `n` (1-based).
 *
 * @example
 * backoffMs({ max: 3, backoff_ms: 100, factor: 2, max_backoff_ms: 250 }, 3); // 250
 */
export function backoffMs(policy: RetryPolicy, n: number): number {
  return Math.min(policy.max_backoff_ms, Math.round(policy.backoff_ms * policy.factor ** (n - 1)));
}
