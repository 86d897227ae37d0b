/**
 * Ping-pong contender, hermes: `RequestChannel.request()` over a dialed Connection to an echo
 * listener in a child process (bench/fixtures/hermes-echo-fixture.ts). Every round trip pays
 * the whole hermes path: envelope creation, ULID, encode, framing, write coalescing, decode,
 * validation, dispatch, the echo's reply envelope, acks, and the request promise.
 */
import { join } from "node:path";
import { RequestChannel } from "../../mesh/requests.ts";
import { dial } from "../../mesh/socket-transport.ts";
import { spawnFixture } from "../lib/child.ts";
import { PAYLOAD_128, payloadOf } from "../lib/payload.ts";
import type { PeerEnv, RoundTripPeer, RoundTripSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/hermes-echo-fixture.ts");

export const hermesRequest: RoundTripPeer = {
  name: "hermes request",
  async open({ dir, placement }: PeerEnv): Promise<RoundTripSession> {
    const path = join(dir, `hermes-echo-cpu${placement.childCpu ?? "any"}.sock`);
    const fixture = await spawnFixture(FIXTURE, [path], placement);
    try {
      const connection = await dial({ path }, { node: "bench-client" });
      const channel = new RequestChannel(connection, "bench-client");
      const route = { target_agent: "echo" };
      const options = { timeoutMs: 10_000 };
      return {
        async roundTrip() {
          await channel.request(route, PAYLOAD_128, options);
        },
        sized(payloadBytes) {
          const payload = payloadOf(payloadBytes);
          return async () => {
            await channel.request(route, payload, options);
          };
        },
        peerPids: [fixture.pid],
        async [Symbol.asyncDispose]() {
          try {
            await connection.close();
          } finally {
            await fixture[Symbol.asyncDispose]();
          }
        },
      };
    } catch (error) {
      await fixture[Symbol.asyncDispose]();
      throw error;
    }
  },
};
