/**
 * OTP's restart intensity: a supervisor may restart at most `intensity` times within any
 * `period` ms; one restart more means something is persistently wrong, and it gives up.
 */
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

/** OTP's defaults: at most 1 restart in 5 seconds. */
export const DEFAULT_INTENSITY = 1;
export const DEFAULT_PERIOD_MS = 5000;

/**
 * A sliding-window restart counter.
 *
 * @example
 * const window = new RestartIntensity(1, 5000);
 * window.record(0);    // false: 1 restart in 5 s is allowed
 * window.record(1000); // true: a 2nd within 5 s exceeds the intensity
 * window.record(9000); // false: the earlier ones left the window
 */
export class RestartIntensity {
  readonly intensity: number;
  readonly period: number;
  #restarts: number[] = [];

  constructor(intensity = DEFAULT_INTENSITY, period = DEFAULT_PERIOD_MS) {
    if (!Number.isInteger(intensity) || intensity < 0) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, `intensity must be an integer >= 0, got ${intensity}`, {
        reason: "bad intensity",
        expected: "integer >= 0",
      });
    }
    if (!(period > 0)) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, `period must be > 0 ms, got ${period}`, {
        reason: "bad period",
        expected: "number > 0",
      });
    }
    this.intensity = intensity;
    this.period = period;
  }

  /** Records a restart at `now`; true when it makes more than `intensity` within `period`. */
  record(now = Date.now()): boolean {
    this.#restarts.push(now);
    this.#forgetBefore(now);
    return this.#restarts.length > this.intensity;
  }

  /** Restarts within the window ending at `now`. */
  count(now = Date.now()): number {
    this.#forgetBefore(now);
    return this.#restarts.length;
  }

  // A restart exactly `period` ms ago has left the window (OTP keeps those strictly newer).
  #forgetBefore(now: number): void {
    const oldest = now - this.period;
    while (this.#restarts.length > 0 && this.#restarts[0]! <= oldest) this.#restarts.shift();
  }
}
