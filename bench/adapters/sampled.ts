/**
 * A ping-pong contender (RoundTripPeer) as a sampled one: its round trips, timed here one by
 * one, exactly as the pingpong scenario times them.
 */
import type { RoundTripPeer, SampledRoundTripPeer } from "./types.ts";

/**
 * @example
 * const raw = sampled(rawEcho);
 * await using session = await raw.open({ dir, placement: SAME_CORE });
 * const ns = await session.roundTrips(1000);
 */
export function sampled(peer: RoundTripPeer, name = peer.name): SampledRoundTripPeer {
  return {
    name,
    async open(env) {
      const session = await peer.open(env);
      return {
        async roundTrips(n) {
          const samples = new Array<number>(n);
          let t = Bun.nanoseconds();
          for (let i = 0; i < n; i++) {
            await session.roundTrip();
            const now = Bun.nanoseconds();
            samples[i] = now - t;
            t = now;
          }
          return samples;
        },
        [Symbol.asyncDispose]: () => session[Symbol.asyncDispose](),
      };
    },
  };
}
