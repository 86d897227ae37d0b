/** Upper bounds (seconds) of the handling-latency histogram buckets, Prometheus style. */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** What an actor reports in each heartbeat: counters since its process started. */
export interface ActorStats {
  /** Handled messages by envelope type. */
  handled: Record<string, number>;
  /** Answers with an error, by error code. */
  errors: Record<string, number>;
  /** Deliveries that were redeliveries (attempt > 1). */
  redeliveries: number;
  /** Cumulative counts per LATENCY_BUCKETS bound, then +Inf. */
  latency_buckets: number[];
  latency_sum_seconds: number;
  latency_count: number;
  /** ms since epoch when this snapshot was taken: rates are computed between two snapshots' own times, not when they were read. */
  at: number;
  /** ms since epoch when the counters started (the process started): a new value means they were reset. */
  started_at: number;
}

/**
 * Counters of one actor process: messages handled, errors by code, redeliveries, and a
 * latency histogram of handling time. Cheap enough for every message; sent to the supervisor
 * with each heartbeat and exported by the gateway's /metrics.
 */
export class ActorMetrics {
  #handled: Record<string, number> = {};
  #errors: Record<string, number> = {};
  #redeliveries = 0;
  #buckets = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  #sum = 0;
  #count = 0;
  readonly #startedAt = Date.now();

  /** One message handled in `seconds`, with the error code it was answered with, if any. */
  handled(type: string, seconds: number, errorCode?: number): void {
    this.#handled[type] = (this.#handled[type] ?? 0) + 1;
    if (errorCode !== undefined) this.#errors[errorCode] = (this.#errors[errorCode] ?? 0) + 1;
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    this.#buckets[i]!++;
    this.#sum += seconds;
    this.#count++;
  }

  redelivered(): void {
    this.#redeliveries++;
  }

  snapshot(): ActorStats {
    let running = 0;
    const cumulative = this.#buckets.map((n) => (running += n));
    return {
      handled: { ...this.#handled },
      errors: { ...this.#errors },
      redeliveries: this.#redeliveries,
      latency_buckets: cumulative,
      latency_sum_seconds: this.#sum,
      latency_count: this.#count,
      at: Date.now(),
      started_at: this.#startedAt,
    };
  }
}
