/**
 * Which children a restart involves, by strategy: the pure part of OTP's restart decision.
 */
import type { Strategy } from "./child-spec.ts";

/**
 * The indexes (in spec order) of the children to stop and restart when the child at `failed`
 * must be restarted: just it (one_for_one), all (one_for_all), or it and those after it
 * (rest_for_one). The supervisor stops the group's others in reverse and starts the group in order.
 *
 * @example
 * restartGroup("rest_for_one", 4, 1); // [1, 2, 3]
 */
export function restartGroup(strategy: Strategy, count: number, failed: number): number[] {
  const all = Array.from({ length: count }, (_, i) => i);
  switch (strategy) {
    case "one_for_one":
      return [failed];
    case "one_for_all":
      return all;
    case "rest_for_one":
      return all.slice(failed);
  }
}
