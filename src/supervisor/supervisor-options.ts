/**
 * The options of a Supervisor and their checking: a bad tree is refused when it is built,
 * not when a child first crashes.
 */
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { BackoffOptions } from "./backoff.ts";
import { RestartType, Strategy, ChildType, type ChildSpec } from "./child-spec.ts";

/**
 * @example
 * const options: SupervisorOptions = {
 *   id: "root",
 *   strategy: "rest_for_one",
 *   intensity: 3,
 *   period: 10_000,
 *   backoff: { initialMs: 50, maxMs: 2000 },
 *   children: [db, api],
 * };
 */
export interface SupervisorOptions {
  id: string;
  /** Default "one_for_one". */
  strategy?: Strategy;
  /** Most restarts allowed within `period` ms before the supervisor gives up. Default 1. */
  intensity?: number;
  /** Default 5000. */
  period?: number;
  /**
   * Delay before a child's repeated restarts; `false` restarts at once every time. A child's
   * first restart after a quiet period (`resetAfterMs`, default `period`, without a restart of
   * it) is immediate; each further one within that period waits the next delay (`initialMs`,
   * then growing by `factor` up to `maxMs`). Each child has its own. The intensity still counts
   * every restart: more than `intensity` within `period` and the supervisor gives up.
   */
  backoff?: BackoffOptions | false;
  /** Started in this order, stopped in the reverse order. */
  children: ChildSpec[];
}

/**
 * Throws a HermesError (INVALID_REQUEST) naming the first problem in `options`.
 *
 * @example
 * checkOptions({ id: "root", children: [a, a] }); // throws: duplicate child id 'a'
 */
export function checkOptions(options: SupervisorOptions): void {
  const problem = findProblem(options);
  if (problem) {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `supervisor '${options?.id}': ${problem}`, {
      reason: problem,
      supervisor: options?.id,
    });
  }
}

function findProblem(options: SupervisorOptions): string | undefined {
  if (typeof options?.id !== "string" || options.id === "") return "id must be a non-empty string";
  if (options.strategy !== undefined && !Object.values(Strategy).includes(options.strategy)) {
    return `unknown strategy '${options.strategy}'`;
  }
  if (!Array.isArray(options.children)) return "children must be an array";
  const seen = new Set<string>();
  for (const child of options.children) {
    if (typeof child?.id !== "string" || child.id === "") return "every child needs a non-empty id";
    if (seen.has(child.id)) return `duplicate child id '${child.id}'`;
    seen.add(child.id);
    if (typeof child.start !== "function") return `child '${child.id}' has no start function`;
    if (child.restart !== undefined && !Object.values(RestartType).includes(child.restart)) {
      return `child '${child.id}' has unknown restart type '${child.restart}'`;
    }
    if (child.type !== undefined && !Object.values(ChildType).includes(child.type)) {
      return `child '${child.id}' has unknown type '${child.type}'`;
    }
    const { shutdown } = child;
    if (shutdown !== undefined && shutdown !== "brutal_kill" && !(typeof shutdown === "number" && shutdown >= 0)) {
      return `child '${child.id}' has bad shutdown '${shutdown}' (ms >= 0 or "brutal_kill")`;
    }
  }
  return undefined;
}
