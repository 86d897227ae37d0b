/**
 * Ping-pong peer, Bun IPC: `Bun.spawn({ ipc })` to a Bun child that answers every message
 * with `process.send(message)` (bench/fixtures/bun-ipc-fixture.ts). The payload is a 128-byte
 * string and the channel uses `serialization: "json"`: Bun's docs offer "advanced" (the
 * default, JSC structured clone) and "json"; measured here (Bun 1.4.5, same core) json is the
 * faster of the two for a 128-byte string (p50 about 12 us against 12.3 us; 3.7 M against 2.1 M
 * one-message sends/s one way), and a Uint8Array is slower in both (JSON turns it into an object).
 */
import { join } from "node:path";
import { spawnFixture } from "../lib/child.ts";
import { TEXT_128 } from "../lib/text-payload.ts";
import type { PeerEnv, RoundTripPeer, RoundTripSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/bun-ipc-fixture.ts");

export const bunIpcEcho: RoundTripPeer = {
  name: "Bun IPC",
  async open({ placement }: PeerEnv): Promise<RoundTripSession> {
    let answered: ((message: unknown) => void) | undefined;
    let failed: ((error: Error) => void) | undefined;
    const fixture = await spawnFixture(FIXTURE, ["echo"], placement, undefined, {
      serialization: "json",
      ipc(message) {
        const resolve = answered;
        answered = undefined;
        resolve?.(message);
      },
    });
    let gone: Error | undefined;
    fixture.exited.then((code) => {
      gone = new Error(`Bun IPC peer exited (${code})`);
      failed?.(gone);
    });
    return {
      async roundTrip() {
        if (gone) throw gone;
        const { promise, resolve, reject } = Promise.withResolvers<unknown>();
        answered = resolve;
        failed = reject;
        fixture.send(TEXT_128);
        if ((await promise) !== TEXT_128) throw new Error("Bun IPC echo answered something else");
      },
      [Symbol.asyncDispose]: () => fixture[Symbol.asyncDispose](),
    };
  },
};
