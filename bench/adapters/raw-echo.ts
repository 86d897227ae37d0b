/**
 * Ping-pong baseline: 128 raw bytes over a plain Bun Unix socket to a child that writes them
 * back (bench/fixtures/raw-echo-fixture.ts). No framing, no codec: the floor hermes is
 * measured against. A round trip resolves a promise from the data callback, as hermes does.
 * `sized(n)` sends n bytes instead; what the kernel does not take at once (Bun's write
 * buffers nothing) is written on drain.
 */
import { join } from "node:path";
import { spawnFixture } from "../lib/child.ts";
import { RAW_128, rawOf } from "../lib/payload.ts";
import type { PeerEnv, RoundTripPeer, RoundTripSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/raw-echo-fixture.ts");

export const rawEcho: RoundTripPeer = {
  name: "raw socket",
  async open({ dir, placement }: PeerEnv): Promise<RoundTripSession> {
    const path = join(dir, `raw-echo-cpu${placement.childCpu ?? "any"}-${Math.random().toString(36).slice(2, 8)}.sock`);
    const fixture = await spawnFixture(FIXTURE, [path], placement);
    let missing = 0;
    let unsent: Uint8Array | undefined;
    let arrived: (() => void) | undefined;
    let failed: ((error: Error) => void) | undefined;
    const flush = (socket: { write(b: Uint8Array): number }) => {
      if (!unsent) return;
      const written = socket.write(unsent);
      unsent = written < unsent.length ? unsent.subarray(Math.max(0, written)) : undefined;
    };
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
          drain: flush,
          close() {
            failed?.(new Error("raw echo peer closed the socket"));
          },
        },
      });
      const roundTripOf = (bytes: Uint8Array) => () => {
        const { promise, resolve, reject } = Promise.withResolvers<void>();
        arrived = resolve;
        failed = reject;
        missing = bytes.length;
        unsent = bytes;
        flush(socket);
        return promise;
      };
      return {
        roundTrip: roundTripOf(RAW_128),
        sized: (payloadBytes) => roundTripOf(rawOf(payloadBytes)),
        peerPids: [fixture.pid],
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
