/**
 * Stream contender, hermes: event envelopes with a 128-byte payload sent with
 * `Connection.send` to a sink in a child process (bench/fixtures/hermes-sink-fixture.ts)
 * that settles each one. The peer's window bounds what is unacknowledged; the rest waits in
 * the connection's own backlog. A burst ends when `whenAcknowledged()` says every envelope
 * was acknowledged.
 */
import { join } from "node:path";
import { createCodec } from "../../mesh/codecs.ts";
import { createEvent } from "../../mesh/envelope.ts";
import type { Connection } from "../../mesh/connection.ts";
import { dial } from "../../mesh/socket-transport.ts";
import { spawnFixture } from "../lib/child.ts";
import { PAYLOAD_128 } from "../lib/payload.ts";
import type { PeerEnv, StreamPeer, StreamSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/hermes-sink-fixture.ts");
const ROUTE = { target_agent: "sink" };

/**
 * Sends `n` event envelopes with a 128-byte payload on `connection` and resolves once the
 * receiver acknowledged every one; the backlog is kept between two marks deep enough that
 * credit (the receiver's `window`) never waits for the sender. Also used by the fan-in
 * scenario's sender processes.
 */
export async function sendBurst(connection: Connection, n: number, window: number, source = "bench-sender"): Promise<void> {
  const highWater = Math.max(4 * window, 16_384);
  const lowWater = highWater >> 1;
  let sent = 0;
  while (sent < n) {
    const batch = Math.min(highWater - connection.backlogged, n - sent);
    for (let i = 0; i < batch; i++) connection.send(createEvent(source, ROUTE, PAYLOAD_128));
    sent += batch;
    if (sent < n && connection.backlogged > lowWater) {
      await connection.whenWritable(lowWater);
      if (!connection.isOpen) throw new Error("hermes stream: connection closed mid-burst");
    }
  }
  if (!(await connection.whenAcknowledged(60_000))) {
    throw new Error(`hermes stream: ${connection.inFlight + connection.backlogged} envelopes unacknowledged after 60 s`);
  }
}

/** The hermes stream with the receiver granting `window` credits. */
export function hermesStream(window: number): StreamPeer {
  return {
    name: `hermes window ${window}`,
    async open({ dir, placement }: PeerEnv): Promise<StreamSession> {
      const path = join(dir, `hermes-sink-w${window}-cpu${placement.childCpu ?? "all"}.sock`);
      const fixture = await spawnFixture(FIXTURE, [path, String(window)], placement);
      try {
        const connection = await dial({ path }, { node: "bench-sender" });
        return {
          frameBytes: steadyFrameBytes(connection.codec),
          send: (n) => sendBurst(connection, n, window),
          async received() {
            return Number(await fixture.ask("count"));
          },
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
}

/** Wire bytes of one envelope once the codec's state is warm (records define a shape once). */
function steadyFrameBytes(codecName: string): number {
  const codec = createCodec(codecName);
  const sample = () => ({ ...createEvent("bench-sender", ROUTE, PAYLOAD_128), seq: 100_000 });
  codec.encode(sample());
  return 4 + codec.encode(sample()).length;
}
