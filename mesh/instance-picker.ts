import type { RegistryEntry } from "./registry-entry.ts";
import type { InstancePicker } from "./router.ts";
import { Scheduler } from "./scheduler.ts";

/**
 * The router's choice among instances, made by a Scheduler: by capability through
 * `Scheduler.pick` (health, circuit, strategy), and among the instances of a pool addressed by
 * name through the same strategy over the healthy ones. `localInFlight` is this process's own
 * view of what it has outstanding per address (fresher than heartbeats).
 */
export function schedulerPicker(scheduler: Scheduler, localInFlight: (address: string) => number = () => 0): InstancePicker {
  const context = { localInFlight, stats: (address: string) => scheduler.stats(address) };
  return (candidates: readonly RegistryEntry[], capability?: string) => {
    if (capability !== undefined) return scheduler.pick(capability, candidates, context);
    return scheduler.strategy.pick(candidates.filter((c) => c.health === "healthy"), context);
  };
}
