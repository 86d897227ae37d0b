/**
 * Exponential backoff with jitter between restarts, so a crashing child does not spin and
 * children that crash together do not come back in lock-step.
 */
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

/** Options of `Backoff`. */
export interface BackoffOptions {
  /** First delay in ms. Default 10. */
  initialMs?: number;
  /** Ceiling of every delay, jitter included. Default 1000. */
  maxMs?: number;
  /** Growth per attempt. Default 2. */
  factor?: number;
  /** Relative spread: 0.2 gives delays within ±20% of the nominal one. Default 0.2. */
  jitter?: number;
  /** After this many ms without a delay asked for, start again from `initialMs`. Default 5000. */
  resetAfterMs?: number;
  /** A source of numbers in [0, 1); inject one to make delays deterministic. Default Math.random. */
  random?: () => number;
}

/**
 * Successive delays: `initialMs * factor^n`, capped at `maxMs`, each moved by a random
 * ±`jitter` fraction.
 *
 * @example
 * const backoff = new Backoff({ initialMs: 10, maxMs: 1000, jitter: 0.2 });
 * await Bun.sleep(backoff.next()); // 8..12 ms
 * await Bun.sleep(backoff.next()); // 16..24 ms
 */
export class Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
  readonly factor: number;
  readonly jitter: number;
  readonly resetAfterMs: number;
  #random: () => number;
  #attempt = 0;
  #lastAt = -Infinity;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 10;
    this.maxMs = options.maxMs ?? 1000;
    this.factor = options.factor ?? 2;
    this.jitter = options.jitter ?? 0.2;
    this.resetAfterMs = options.resetAfterMs ?? 5000;
    this.#random = options.random ?? Math.random;
    const valid =
      this.initialMs >= 0 && this.maxMs >= this.initialMs && this.factor >= 1 &&
      this.jitter >= 0 && this.jitter <= 1 && this.resetAfterMs >= 0;
    if (!valid) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, "bad backoff options", {
        reason: "bad backoff options",
        expected: "0 <= initialMs <= maxMs, factor >= 1, 0 <= jitter <= 1, resetAfterMs >= 0",
      });
    }
  }

  /** The attempt the next delay is for (0 = first, or first again after a quiet period). */
  get attempt(): number {
    return this.#attempt;
  }

  /** The next delay in whole ms, advancing the attempt; `now` is for tests. */
  next(now = Date.now()): number {
    if (now - this.#lastAt >= this.resetAfterMs) this.#attempt = 0;
    this.#lastAt = now;
    // `|| 0` covers 0 * Infinity; the attempt stops growing at the cap so it cannot overflow.
    const nominal = Math.min(this.maxMs, this.initialMs * this.factor ** this.#attempt) || 0;
    if (nominal < this.maxMs) this.#attempt++;
    const spread = 1 + this.jitter * (2 * this.#random() - 1);
    return Math.round(Math.min(this.maxMs, Math.max(0, nominal * spread)));
  }

  /** Starts again from `initialMs`. */
  reset(): void {
    this.#attempt = 0;
  }
}
