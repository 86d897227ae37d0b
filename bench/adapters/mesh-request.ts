/**
 * Ping-pong contender, the actor path as a program uses it: `client.request("echo", …)` from a
 * `connectMesh` client in this process to the echo actor (actors/echo.ts) in its own process
 * under a real supervisor. Beside "hermes request" (the transport alone) it adds what a user's
 * call pays on top: routing from the registry, the actor host's mailbox and handler, the
 * handler context. Placement: the echo is moved to the placement's child cpu.
 */
import { startBenchMesh } from "../lib/mesh.ts";
import { PAYLOAD_128, payloadOf } from "../lib/payload.ts";
import { pinProcess } from "../lib/placement.ts";
import type { PeerEnv, RoundTripPeer, RoundTripSession } from "./types.ts";

const ECHO_YAML = (name: string) => `mesh: { name: ${name}, events: false }
supervisor:
  children:
    - { actor: echo, module: "{ACTORS}/echo.ts" }
`;

export const meshRequest: RoundTripPeer = {
  name: "client to actor request",
  async open({ placement }: PeerEnv): Promise<RoundTripSession> {
    const mesh = await startBenchMesh(ECHO_YAML(`request-${Math.random().toString(36).slice(2, 6)}`));
    try {
      const echo = mesh.pid("echo");
      if (placement.childCpu !== undefined && !pinProcess(echo, placement)) throw new Error(`could not pin the echo actor to cpu ${placement.childCpu}`);
      const client = await mesh.client();
      const options = { timeoutMs: 10_000 };
      return {
        async roundTrip() {
          await client.request("echo", PAYLOAD_128, options);
        },
        sized(payloadBytes) {
          const payload = payloadOf(payloadBytes);
          return async () => {
            await client.request("echo", payload, options);
          };
        },
        peerPids: [echo],
        [Symbol.asyncDispose]: () => mesh[Symbol.asyncDispose](),
      };
    } catch (error) {
      await mesh[Symbol.asyncDispose]();
      throw error;
    }
  },
};
