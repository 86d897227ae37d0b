import type { Route } from "./envelope.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import type { RegistryEntry } from "./registry.ts";
import { Scheduler } from "./scheduler.ts";

/** The registry lookups routing needs (mesh/registry.ts provides them). */
export interface RouteTable {
  /** Instances a target names: an actor name (all its instances), an "name#i" address or a stable id. */
  resolveTarget(target: string): RegistryEntry[];
  /** Instances declaring a capability. */
  withCapability(capability: string): RegistryEntry[];
  /** Subscribers of a topic, one group of instances per subscribing actor (a pool gets one delivery). */
  subscribersOf(topic: string): Array<{ instances: RegistryEntry[] }>;
  /** What a route of this kind can reach, for error messages: actor names, or the capabilities or topic patterns declared. */
  known(kind?: "name" | "capability" | "topic"): string[];
}

/** Picks one instance among candidates (the scheduler); undefined when none is usable. */
export type InstancePicker = (candidates: readonly RegistryEntry[], capability?: string) => RegistryEntry | undefined;

/**
 * The three routing layers of the seed design, in precedence order (docs/protocol.md §3):
 * `target_agent`, else `topic` (every matching subscriber), else `capability` (one healthy
 * instance chosen by the scheduler). Nothing matching is code 8 naming what is known.
 */
export class Router {
  #table: RouteTable;
  #pick: InstancePicker;

  constructor(table: RouteTable, pick: InstancePicker) {
    this.#table = table;
    this.#pick = pick;
  }

  /** The destinations of a route: one instance, or one per subscribing actor for a topic. */
  destinations(route: Route): RegistryEntry[] {
    if (route.target_agent !== undefined) {
      const candidates = this.#table.resolveTarget(route.target_agent);
      const chosen = this.#choose(candidates);
      if (!chosen) throw this.#unroutable(`no actor named '${route.target_agent}'`, route.target_agent, candidates, "name");
      return [chosen];
    }
    if (route.topic !== undefined) {
      const groups = this.#table.subscribersOf(route.topic);
      const chosen = groups.map((group) => this.#choose(group.instances)).filter((e) => e !== undefined);
      if (chosen.length === 0) throw this.#unroutable(`no subscriber for topic '${route.topic}'`, route.topic, [], "topic");
      return chosen;
    }
    if (route.capability !== undefined) {
      const candidates = this.#table.withCapability(route.capability);
      const chosen = this.#choose(candidates, route.capability);
      if (!chosen) throw this.#unroutable(`no healthy actor with capability '${route.capability}'`, route.capability, candidates, "capability");
      return [chosen];
    }
    throw new HermesError(ErrorCode.INVALID_REQUEST, "a route needs target_agent, topic or capability", {
      reason: "no route",
      expected: "one of target_agent, topic, capability",
    });
  }

  /**
   * A healthy instance by the scheduler's choice; when none is healthy (all restarting), still
   * one of them: its link holds the envelope until the instance is back, so a crash loses nothing.
   */
  #choose(candidates: readonly RegistryEntry[], capability?: string): RegistryEntry | undefined {
    if (candidates.length <= 1) return candidates[0];
    return this.#pick(candidates, capability) ?? candidates[Math.floor(Math.random() * candidates.length)];
  }

  #unroutable(detail: string, target: string, candidates: RegistryEntry[], kind: "name" | "capability" | "topic"): HermesError {
    const down = candidates.filter((c) => c.health !== "healthy").map((c) => `${c.address} (${c.health})`);
    return new HermesError(ErrorCode.UNROUTABLE, down.length > 0 ? `${detail}: ${down.join(", ")}` : detail, {
      target,
      known: this.#table.known(kind),
    });
  }
}

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
