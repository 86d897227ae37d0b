/**
 * A ping-pong contender (RoundTripPeer) as a sampled one: its round trips, timed here one by
 * one, exactly as the pingpong scenario times them. Payload sizes other than 128 bytes need
 * the session's `sized`.
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
      const bySize = new Map<number, () => Promise<void>>([[128, () => session.roundTrip()]]);
      const roundTripOf = (bytes: number) => {
        let roundTrip = bySize.get(bytes);
        if (!roundTrip) {
          if (!session.sized) throw new Error(`${name} carries only 128-byte payloads`);
          bySize.set(bytes, (roundTrip = session.sized(bytes)));
        }
        return roundTrip;
      };
      return {
        async roundTrips(n, payloadBytes = 128) {
          const roundTrip = roundTripOf(payloadBytes);
          const samples = new Array<number>(n);
          let t = Bun.nanoseconds();
          for (let i = 0; i < n; i++) {
            await roundTrip();
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
