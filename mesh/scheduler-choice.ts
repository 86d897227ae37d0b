import { leastLoaded, roundRobin, Scheduler, weighted, type SchedulingStrategy } from "./scheduler.ts";

/** Strategy names a mesh file (`mesh.scheduler`) and HERMES_SCHEDULER accept. */
export const STRATEGY_NAMES = ["least_loaded", "round_robin", "weighted"] as const;
export type StrategyName = (typeof STRATEGY_NAMES)[number];

const FACTORIES: Record<StrategyName, () => SchedulingStrategy> = {
  least_loaded: leastLoaded,
  round_robin: roundRobin,
  weighted: () => weighted(),
};

/**
 * The scheduler a mesh member routes with: the strategy named by HERMES_SCHEDULER (set from the
 * mesh file by the supervisor), least-loaded by default.
 *
 * @example
 * const scheduler = schedulerFromEnv(); // HERMES_SCHEDULER=weighted
 */
export function schedulerFromEnv(env: Record<string, string | undefined> = process.env): Scheduler {
  const name = (env.HERMES_SCHEDULER ?? "least_loaded") as StrategyName;
  return new Scheduler((FACTORIES[name] ?? leastLoaded)());
}
