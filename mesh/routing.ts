import { ErrorCode, HermesError } from "./errors.ts";
import type { RegistryEntry } from "./registry.ts";
import { MessageType, type Envelope, type Route } from "./envelope.ts";

/** Recent outcomes of calls to one address, as exponentially weighted moving averages. */
export interface CallStats {
  /** EWMA of success (1) and failure (0). */
  successRate: number;
  /** EWMA of call latency in ms. */
  latencyMs: number;
  samples: number;
  consecutiveFailures: number;
}

/** What a strategy may consult besides the candidates' registry entries. */
export interface SchedulingContext {
  /** Requests this process has sent to `address` and not yet seen answered. */
  localInFlight(address: string): number;
  /** Call statistics the Scheduler keeps; it fills this in before calling the strategy. */
  stats?(address: string): CallStats | undefined;
}

/** Chooses one of the healthy candidates; undefined only when there are none. */
export interface SchedulingStrategy {
  name: string;
  pick(candidates: readonly RegistryEntry[], context: SchedulingContext): RegistryEntry | undefined;
}

/**
 * Why strategies keep "last picked" per address rather than a cursor: the candidate list
 * differs per capability and changes with health, and a shared cursor over varying lists
 * skews (two capabilities alternating can each land on index 0 every time). Picking the least
 * recently picked candidate rotates evenly over any list.
 */
function lruPicker() {
  const lastPicked = new Map<string, number>();
  let clock = 0;
  return (candidates: readonly RegistryEntry[]): RegistryEntry | undefined => {
    let best: RegistryEntry | undefined;
    let bestAt = Infinity;
    for (const c of candidates) {
      const at = lastPicked.get(c.address) ?? -1;
      if (at < bestAt) [best, bestAt] = [c, at];
    }
    if (best) lastPicked.set(best.address, ++clock);
    return best;
  };
}

/**
 * Every candidate in turn.
 *
 * @example
 * const scheduler = new Scheduler(roundRobin());
 */
export function roundRobin(): SchedulingStrategy {
  const next = lruPicker();
  return { name: "round_robin", pick: (candidates) => next(candidates) };
}

/**
 * The candidate with the least work: queue depth plus handlers running (from its heartbeat)
 * plus what this process has in flight to it (fresher than any heartbeat). Ties go round-robin.
 *
 * @example
 * const scheduler = new Scheduler(leastLoaded());
 */
export function leastLoaded(): SchedulingStrategy {
  const next = lruPicker();
  return {
    name: "least_loaded",
    pick(candidates, context) {
      let min = Infinity;
      let tied: RegistryEntry[] = [];
      for (const c of candidates) {
        const score = c.queueDepth + c.inFlight + context.localInFlight(c.address);
        if (score < min) [min, tied] = [score, [c]];
        else if (score === min) tied.push(c);
      }
      return next(tied);
    },
  };
}

/**
 * Shares proportional to recent success rate over latency (weight = successRate / latencyMs),
 * spread deterministically by smooth weighted round-robin. Candidates without statistics
 * count as fully successful at the average latency of the others, so a new instance gets a
 * fair share; `minSuccess` keeps a failing instance probed now and then.
 *
 * @example
 * const scheduler = new Scheduler(weighted());
 * scheduler.record("ocr#0", { ok: true, latencyMs: 12 });
 */
export function weighted(options: { minSuccess?: number } = {}): SchedulingStrategy {
  const minSuccess = options.minSuccess ?? 0.05;
  const current = new Map<string, number>();
  return {
    name: "weighted",
    pick(candidates, context) {
      const stats = candidates.map((c) => context.stats?.(c.address));
      const known = stats.filter((s): s is CallStats => s !== undefined && s.samples > 0);
      const defaultLatency = known.length ? known.reduce((sum, s) => sum + s.latencyMs, 0) / known.length : 1;
      let total = 0;
      let best: RegistryEntry | undefined;
      let bestCurrent = -Infinity;
      candidates.forEach((c, i) => {
        const s = stats[i]?.samples ? stats[i] : undefined;
        const weight = Math.max(s?.successRate ?? 1, minSuccess) / Math.max(s?.latencyMs ?? defaultLatency, 0.01);
        const value = (current.get(c.address) ?? 0) + weight;
        current.set(c.address, value);
        total += weight;
        if (value > bestCurrent) [best, bestCurrent] = [c, value];
      });
      if (best) current.set(best.address, bestCurrent - total);
      return best;
    },
  };
}

export interface SchedulerOptions {
  /** Consecutive failures that open an address's circuit (default 5). */
  failureThreshold?: number;
  /** How long an open circuit keeps the address out before one trial call (default 5000 ms). */
  coolDownMs?: number;
  /** EWMA smoothing factor: weight of the newest sample (default 0.2). */
  alpha?: number;
  /** `retry_after_ms` suggested when no declaring instance is healthy (default 1000). */
  retryAfterMs?: number;
  /** Clock, for tests. */
  now?: () => number;
}

const NO_LOCAL_LOAD: SchedulingContext = { localInFlight: () => 0 };

/**
 * Capability routing: among the instances declaring a capability, skips those not "healthy" or
 * whose circuit is open, and lets the strategy choose. Callers report each call's outcome with
 * `record`, which feeds the weighted strategy and the circuit breaker.
 *
 * @example
 * const scheduler = new Scheduler(leastLoaded());
 * const target = scheduler.pick("ocr", registry.withCapability("ocr"), { localInFlight: (a) => pending.count(a) });
 * // ... after the response:
 * scheduler.record(target.address, { ok: true, latencyMs: 8 });
 */
export class Scheduler {
  readonly strategy: SchedulingStrategy;
  #stats = new Map<string, CallStats & { openUntil: number }>();
  #threshold: number;
  #coolDownMs: number;
  #alpha: number;
  #retryAfterMs: number;
  #now: () => number;

  constructor(strategy: SchedulingStrategy = leastLoaded(), options: SchedulerOptions = {}) {
    this.strategy = strategy;
    this.#threshold = options.failureThreshold ?? 5;
    this.#coolDownMs = options.coolDownMs ?? 5000;
    this.#alpha = options.alpha ?? 0.2;
    this.#retryAfterMs = options.retryAfterMs ?? 1000;
    this.#now = options.now ?? Date.now;
  }

  /** The chosen instance, or undefined when no healthy instance with a closed circuit declares `capability`. */
  pick(capability: string, entries: readonly RegistryEntry[], context: SchedulingContext = NO_LOCAL_LOAD): RegistryEntry | undefined {
    const now = this.#now();
    const candidates = entries.filter((e) => e.health === "healthy" && e.capabilities.includes(capability) && this.#closed(e.address, now));
    const chosen = this.strategy.pick(candidates, { localInFlight: (a) => context.localInFlight(a), stats: (a) => this.stats(a) });
    const state = chosen && this.#stats.get(chosen.address);
    // Half-open: the trial call re-arms the cool-down so only one call probes a failing instance.
    if (state && state.consecutiveFailures >= this.#threshold) state.openUntil = now + this.#coolDownMs;
    return chosen;
  }

  /**
   * Like `pick`, but throws: code 8 (UNROUTABLE, with the declared capabilities as `known`)
   * when no instance declares the capability, code 10 (UNAVAILABLE, with `retry_after_ms`)
   * when some do but none is healthy with a closed circuit.
   */
  pickOrThrow(capability: string, entries: readonly RegistryEntry[], context?: SchedulingContext): RegistryEntry {
    const chosen = this.pick(capability, entries, context);
    if (chosen) return chosen;
    const declaring = entries.filter((e) => e.capabilities.includes(capability));
    if (declaring.length === 0) {
      const known = [...new Set(entries.flatMap((e) => e.capabilities))].sort();
      throw new HermesError(ErrorCode.UNROUTABLE, `no actor declares capability '${capability}'`, { target: capability, known });
    }
    const now = this.#now();
    // An open circuit knows when it will let a trial through; an unhealthy instance does not.
    const waits = declaring.map((e) =>
      e.health === "healthy" ? Math.max(1, (this.#stats.get(e.address)?.openUntil ?? 0) - now) : this.#retryAfterMs);
    throw new HermesError(ErrorCode.UNAVAILABLE, `no healthy instance for capability '${capability}'`, {
      target: capability,
      retry_after_ms: Math.min(...waits),
    });
  }

  /** Reports the outcome of one call to `address`. */
  record(address: string, outcome: { ok: boolean; latencyMs: number }): void {
    const sample = outcome.ok ? 1 : 0;
    let s = this.#stats.get(address);
    if (!s) {
      s = { successRate: sample, latencyMs: outcome.latencyMs, samples: 0, consecutiveFailures: 0, openUntil: 0 };
      this.#stats.set(address, s);
    } else {
      s.successRate += this.#alpha * (sample - s.successRate);
      s.latencyMs += this.#alpha * (outcome.latencyMs - s.latencyMs);
    }
    s.samples++;
    if (outcome.ok) {
      s.consecutiveFailures = 0;
      s.openUntil = 0;
    } else if (++s.consecutiveFailures >= this.#threshold) {
      s.openUntil = this.#now() + this.#coolDownMs;
    }
  }

  /** A copy of the statistics of `address`, if any call to it was recorded. */
  stats(address: string): CallStats | undefined {
    const s = this.#stats.get(address);
    return s && { successRate: s.successRate, latencyMs: s.latencyMs, samples: s.samples, consecutiveFailures: s.consecutiveFailures };
  }

  /** True while `address` is kept out by its circuit breaker. */
  isOpen(address: string): boolean {
    return !this.#closed(address, this.#now());
  }

  /** Drops what is known about `address` (it left the registry, or restarted fresh). */
  forget(address: string): void {
    this.#stats.delete(address);
  }

  #closed(address: string, now: number): boolean {
    const s = this.#stats.get(address);
    return !s || s.consecutiveFailures < this.#threshold || now >= s.openUntil;
  }
}

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

/** The registry lookups routing needs (mesh/registry.ts provides them). */
export interface RouteTable {
  /** Instances a target names: an actor name (all its instances), an "name#i" address or a stable id. */
  resolveTarget(target: string): readonly RegistryEntry[];
  /** Instances declaring a capability. */
  withCapability(capability: string): readonly RegistryEntry[];
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
   * Where a request or event that waits for `away` (an instance that crashed or hangs) could go
   * instead: another healthy instance that its own route names (a sibling declaring the
   * capability, another instance of the pool it named, of the subscriber group it went to), by
   * the scheduler's choice. Undefined when the route named `away` alone (an instance address, a
   * stable id) or could not have led to it, for answers and cancels, and when no sibling is healthy.
   *
   * @example
   * router.alternative(stranded, "ocr#0")?.address; // "ocr#1" while that one is healthy
   */
  alternative(env: Envelope, away: string): RegistryEntry | undefined {
    if (env.message_type !== MessageType.REQUEST && env.message_type !== MessageType.EVENT) return undefined;
    let candidates: readonly RegistryEntry[];
    if (env.target_agent !== undefined) candidates = this.#table.resolveTarget(env.target_agent);
    else if (env.topic !== undefined) candidates = this.#table.subscribersOf(env.topic).find((group) => group.instances.some((e) => e.address === away))?.instances ?? [];
    else if (env.capability !== undefined) candidates = this.#table.withCapability(env.capability);
    else return undefined;
    if (!candidates.some((c) => c.address === away)) return undefined;
    const siblings = candidates.filter((c) => c.address !== away && c.health === "healthy");
    return siblings.length > 0 ? this.#pick(siblings, env.capability) : undefined;
  }

  /**
   * A healthy instance by the scheduler's choice; when none is healthy (all restarting), still
   * one of them: its link holds the envelope until the instance is back, so a crash loses nothing.
   */
  #choose(candidates: readonly RegistryEntry[], capability?: string): RegistryEntry | undefined {
    if (candidates.length <= 1) return candidates[0];
    return this.#pick(candidates, capability) ?? candidates[Math.floor(Math.random() * candidates.length)];
  }

  #unroutable(detail: string, target: string, candidates: readonly RegistryEntry[], kind: "name" | "capability" | "topic"): HermesError {
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
