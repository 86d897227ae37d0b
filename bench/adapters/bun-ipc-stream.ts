/**
 * Stream peer, Bun IPC: `subprocess.send()` to a Bun child (bench/fixtures/bun-ipc-fixture.ts)
 * that counts and answers once per tick with its cumulative count; at most WINDOW messages are
 * unacknowledged (the channel has no back-pressure of its own: `send` queues whatever it is
 * given). `serialization: "json"` and a 128-byte string, the fastest pair measured (see
 * bun-ipc-echo.ts). Two ways to use it:
 * - batch 1: one `send` per message, what an actor library built on IPC does;
 * - batch 256: arrays of 256 payloads per `send`, the most a JSON message carries without
 *   growing past what the raw baseline writes at once (256 x 131 B = 33 KiB), and the receiver
 *   counts every element: the IPC equivalent of the raw baseline's batched writes.
 */
import { join } from "node:path";
import { CumulativeAcks } from "../lib/acks.ts";
import { spawnFixture } from "../lib/child.ts";
import { jsonLineBytes, TEXT_128 } from "../lib/text-payload.ts";
import type { PeerEnv, StreamPeer, StreamSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/bun-ipc-fixture.ts");
/** Unacknowledged messages at most: as the hermes stream's largest window. */
const WINDOW = 8192;

/** The Bun IPC stream with `batch` payloads per `send`. */
export function bunIpcStream(batch: number): StreamPeer {
  const full = Array.from({ length: batch }, () => TEXT_128);
  return {
    name: batch === 1 ? "Bun IPC" : `Bun IPC batch ${batch}`,
    async open({ placement }: PeerEnv): Promise<StreamSession> {
      const acks = new CumulativeAcks();
      const fixture = await spawnFixture(FIXTURE, ["sink"], placement, undefined, {
        serialization: "json",
        ipc: (count) => acks.update(count as number),
      });
      fixture.exited.then((code) => acks.fail(new Error(`Bun IPC sink exited (${code})`)));
      const sendSome =
        batch === 1
          ? () => {
              fixture.send(TEXT_128);
              return 1;
            }
          : (max: number) => {
              const k = Math.min(batch, max);
              fixture.send(k === batch ? full : full.slice(0, k));
              return k;
            };
      return {
        frameBytes: batch === 1 ? jsonLineBytes(TEXT_128) : jsonLineBytes(full) / batch,
        send: (n) => acks.burst(n, WINDOW, sendSome),
        async received() {
          return Number(await fixture.ask("count"));
        },
        [Symbol.asyncDispose]: () => fixture[Symbol.asyncDispose](),
      };
    },
  };
}
