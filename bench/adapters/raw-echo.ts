/**
 * Ping-pong baseline: 128 raw bytes over a plain Bun Unix socket to a child that writes them
 * back (bench/fixtures/raw-echo-fixture.ts). No framing, no codec: the floor hermes is
 * measured against. A round trip resolves a promise from the data callback, as hermes does.
 */
import { join } from "node:path";
import { spawnFixture } from "../lib/child.ts";
import { RAW_128 } from "../lib/payload.ts";
import type { PeerEnv, RoundTripPeer, RoundTripSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/raw-echo-fixture.ts");

export const rawEcho: RoundTripPeer = {
  name: "raw socket",
  async open({ dir, placement }: PeerEnv): Promise<RoundTripSession> {
    const path = join(dir, `raw-echo-cpu${placement.childCpu ?? "any"}.sock`);
    const fixture = await spawnFixture(FIXTURE, [path], placement);
    let missing = 0;
    let arrived: (() => void) | undefined;
    let failed: ((error: Error) => void) | undefined;
    try {
      const socket = await Bun.connect({
        unix: path,
        socket: {
          data(_socket, chunk) {
            missing -= chunk.length;
            if (missing <= 0 && arrived) {
              const resolve = arrived;
              arrived = failed = undefined;
              resolve();
            }
          },
          close() {
            failed?.(new Error("raw echo peer closed the socket"));
          },
        },
      });
      return {
        roundTrip() {
          const { promise, resolve, reject } = Promise.withResolvers<void>();
          arrived = resolve;
          failed = reject;
          missing = RAW_128.length;
          if (socket.write(RAW_128) !== RAW_128.length) reject(new Error("raw socket refused a 128-byte write"));
          return promise;
        },
        async [Symbol.asyncDispose]() {
          socket.end();
          await fixture[Symbol.asyncDispose]();
        },
      };
    } catch (error) {
      await fixture[Symbol.asyncDispose]();
      throw error;
    }
  },
};
