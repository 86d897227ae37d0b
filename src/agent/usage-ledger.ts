/**
 * Token and cost accounting per trace: one user request fans out into many model calls across
 * agents, and what it cost is the sum over its trace.
 */
import type { Usage } from "./chat-types.ts";

/** What a model costs in US dollars per 1,000 tokens. */
export interface ModelPrice {
  prompt_per_1k: number;
  completion_per_1k: number;
}

/** Everything one trace used. */
export interface UsageTotals {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Sum over the calls whose model has a price; calls without one add 0 (see `unpriced_calls`). */
  cost_usd: number;
  calls: number;
  /** Calls to models with no price configured: when above 0, `cost_usd` is a lower bound. */
  unpriced_calls: number;
}

/** Options of `UsageLedger`. */
export interface UsageLedgerOptions {
  /** Prices by model name (exact match). Models not listed cost 0, counted as `unpriced_calls`. */
  prices?: Record<string, ModelPrice>;
  /** Traces kept; past this the least recently recorded one is forgotten. Default 10,000. */
  maxTraces?: number;
}

const empty = (): UsageTotals => ({
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  cost_usd: 0,
  calls: 0,
  unpriced_calls: 0,
});

/**
 * Sums token usage and cost per trace_id, in bounded memory. No prices are built in, because
 * they change and differ per provider: with none configured every cost is 0 and every call is
 * counted in `unpriced_calls`, which says "unknown" rather than "free".
 *
 * @example
 * const ledger = new UsageLedger({ prices: { "gpt-4o-mini": { prompt_per_1k: 0.00015, completion_per_1k: 0.0006 } } });
 * ledger.record("trace-1", "gpt-4o-mini", { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 });
 * ledger.totals("trace-1"); // { total_tokens: 1500, cost_usd: 0.00045, calls: 1, unpriced_calls: 0, ... }
 */
export class UsageLedger {
  readonly maxTraces: number;
  #prices: Map<string, ModelPrice>;
  // A Map iterates in insertion order; re-inserting on every record makes the first key the
  // least recently used, so eviction is O(1).
  #traces = new Map<string, UsageTotals>();

  constructor(options: UsageLedgerOptions = {}) {
    this.maxTraces = Math.max(1, options.maxTraces ?? 10_000);
    this.#prices = new Map(Object.entries(options.prices ?? {}));
  }

  /** Sets or replaces the price of a model; calls already recorded keep the cost they had. */
  setPrice(model: string, price: ModelPrice): void {
    this.#prices.set(model, price);
  }

  /** The cost of one call's usage with `model`'s price, or undefined when it has none. */
  costOf(model: string, usage: Usage): number | undefined {
    const price = this.#prices.get(model);
    if (!price) return undefined;
    return (usage.prompt_tokens * price.prompt_per_1k + usage.completion_tokens * price.completion_per_1k) / 1000;
  }

  /**
   * Adds one call to its trace.
   *
   * @example
   * ledger.record(request.trace_id, response.model, response.usage);
   */
  record(trace_id: string, model: string, usage: Usage): void {
    const totals = this.#traces.get(trace_id) ?? empty();
    this.#traces.delete(trace_id);
    this.#traces.set(trace_id, totals);
    if (this.#traces.size > this.maxTraces) this.#traces.delete(this.#traces.keys().next().value!);
    totals.prompt_tokens += usage.prompt_tokens;
    totals.completion_tokens += usage.completion_tokens;
    totals.total_tokens += usage.total_tokens;
    totals.calls++;
    const cost = this.costOf(model, usage);
    if (cost === undefined) totals.unpriced_calls++;
    else totals.cost_usd += cost;
  }

  /**
   * What a trace used so far; all zeros for a trace never seen (or forgotten).
   *
   * @example
   * const { total_tokens, cost_usd } = ledger.totals("trace-1");
   */
  totals(trace_id: string): UsageTotals {
    const totals = this.#traces.get(trace_id);
    return totals ? { ...totals } : empty();
  }

  /** Drops a trace, e.g. once its totals went into the final answer. */
  forget(trace_id: string): void {
    this.#traces.delete(trace_id);
  }

  /** How many traces are held. */
  get size(): number {
    return this.#traces.size;
  }
}
