/**
 * A circuit breaker: after enough consecutive failures a dependency is left alone for a while,
 * so callers fail in microseconds instead of queueing on a dead endpoint, and the endpoint gets
 * room to recover.
 */
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

/** Where a breaker stands: `closed` lets calls through, `open` rejects them, `half-open` lets one trial through. */
export type CircuitState = "closed" | "open" | "half-open";

/** Options of `CircuitBreaker`. */
export interface CircuitBreakerOptions {
  /** Named in rejections, e.g. the endpoint. Default "circuit". */
  name?: string;
  /** Consecutive failures that open the circuit. Default 5. */
  failureThreshold?: number;
  /** How long the circuit stays open before one trial call is let through, in ms. Default 30,000. */
  coolDownMs?: number;
  /** Which errors count against the dependency; the others leave the count as it is. Default: all. */
  isFailure?: (error: unknown) => boolean;
  /** Clock in ms; inject one in tests. Default Date.now. */
  now?: () => number;
}

/**
 * closed → open after `failureThreshold` consecutive failures → half-open once `coolDownMs`
 * has passed, letting exactly one trial call through → closed when it succeeds, open again
 * (for a fresh cool-down) when it fails. While open, or while the trial is in flight, calls are
 * rejected at once with HermesError code 10 (UNAVAILABLE) carrying `retry_after_ms`.
 *
 * An error that `isFailure` does not count (a 400, a caller's cancel) neither opens nor closes
 * the circuit; if it ends the trial, the next call becomes the trial.
 *
 * @example
 * const breaker = new CircuitBreaker({ name: "llm", failureThreshold: 5, coolDownMs: 30_000 });
 * const reply = await breaker.run(() => fetch(url)); // throws code 10 while the circuit is open
 */
export class CircuitBreaker {
  readonly name: string;
  readonly failureThreshold: number;
  readonly coolDownMs: number;
  #isFailure: (error: unknown) => boolean;
  #now: () => number;
  #failures = 0;
  #openedAt: number | null = null;
  #trialInFlight = false;

  constructor(options: CircuitBreakerOptions = {}) {
    this.name = options.name ?? "circuit";
    this.failureThreshold = options.failureThreshold ?? 5;
    this.coolDownMs = options.coolDownMs ?? 30_000;
    this.#isFailure = options.isFailure ?? (() => true);
    this.#now = options.now ?? Date.now;
    if (!(Number.isInteger(this.failureThreshold) && this.failureThreshold >= 1 && this.coolDownMs >= 0)) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, "bad circuit breaker options", {
        reason: "bad circuit breaker options",
        expected: "failureThreshold an integer >= 1, coolDownMs >= 0",
      });
    }
  }

  /** The state now; `open` turns into `half-open` by itself when the cool-down is over. */
  get state(): CircuitState {
    if (this.#openedAt === null) return "closed";
    return this.#now() - this.#openedAt >= this.coolDownMs ? "half-open" : "open";
  }

  /** Failures in a row since the last success. */
  get consecutiveFailures(): number {
    return this.#failures;
  }

  /**
   * Runs `fn` if the circuit lets it through and records how it went. `isFailure` overrides the
   * breaker's own classification for this call.
   *
   * @example
   * await breaker.run(() => callModel(), (error) => !(error instanceof HermesError && error.code === 2));
   */
  async run<T>(fn: () => Promise<T>, isFailure: (error: unknown) => boolean = this.#isFailure): Promise<T> {
    const trial = this.#admit();
    let result: T;
    try {
      result = await fn();
    } catch (error) {
      this.#settle(trial, isFailure(error) ? "failure" : "neutral");
      throw error;
    }
    this.#settle(trial, "success");
    return result;
  }

  /** Back to closed with no failures counted, e.g. after an operator fixed the endpoint. */
  reset(): void {
    this.#failures = 0;
    this.#openedAt = null;
    this.#trialInFlight = false;
  }

  /** Throws when the call may not go through; true when it is the half-open trial. */
  #admit(): boolean {
    const state = this.state;
    if (state === "closed") return false;
    if (state === "half-open" && !this.#trialInFlight) {
      this.#trialInFlight = true;
      return true;
    }
    // While the trial is in flight nobody knows yet; a fresh cool-down is the worst case.
    const retryAfterMs = state === "open" ? this.#openedAt! + this.coolDownMs - this.#now() : this.coolDownMs;
    throw new HermesError(
      ErrorCode.UNAVAILABLE,
      `circuit '${this.name}' is open after ${this.#failures} consecutive failures; retry in ${retryAfterMs} ms`,
      { reason: "circuit open", circuit: this.name, retry_after_ms: retryAfterMs },
    );
  }

  #settle(trial: boolean, outcome: "success" | "failure" | "neutral"): void {
    if (trial) {
      this.#trialInFlight = false;
      if (outcome === "success") this.reset();
      else if (outcome === "failure") {
        this.#failures++;
        this.#open();
      }
      return;
    }
    // Calls that started before the circuit opened say nothing about the endpoint now.
    if (this.#openedAt !== null) return;
    if (outcome === "success") this.#failures = 0;
    else if (outcome === "failure" && ++this.#failures >= this.failureThreshold) this.#open();
  }

  #open(): void {
    this.#failures = Math.max(this.#failures, this.failureThreshold);
    this.#openedAt = this.#now();
  }
}
