/**
 * A round-trip contender whose round trips may overlap (hermes' RequestChannel matches answers
 * by correlation id) as an open-loop one, driven from this process.
 */
import { closedLoopRate, runOpenLoop } from "../lib/open-loop.ts";
import type { OpenLoopPeer, RoundTripPeer } from "./types.ts";

/**
 * @example
 * const peer = openLoopOf(hermesRequest);
 * await using s = await peer.open({ dir, placement: SAME_CORE });
 * const r = await s.run({ rate: 5000, durationMs: 1000 });
 */
export function openLoopOf(peer: RoundTripPeer, name = peer.name): OpenLoopPeer {
  return {
    name,
    async open(env) {
      const session = await peer.open(env);
      const request = () => session.roundTrip();
      return {
        run: (spec) => runOpenLoop(request, spec),
        closedLoop: (concurrency, ms) => closedLoopRate(request, concurrency, ms),
        [Symbol.asyncDispose]: () => session[Symbol.asyncDispose](),
      };
    },
  };
}
