/**
 * Ping-pong and stream peer, NATS: nats.js (the `nats` package) on Bun against a local
 * nats-server that each session starts on a free loopback port (bench/lib/servers.ts), pinned
 * with the peer process (same core: everything on cpu 0; cross core: server and peer on cpu 1),
 * core NATS only (no JetStream): the fastest path the NATS docs offer.
 * - request: `nc.request("bench.echo", 128 bytes)` to a subscription answering with
 *   `msg.respond` (bench/fixtures/nats-fixture.ts); nats.js multiplexes every reply on one inbox
 *   subscription (its default, no subscription per request).
 * - stream: `nc.publish("bench.stream", 128 bytes)`, raw Uint8Array (no codec), to a
 *   subscriber counting and publishing its cumulative count on `bench.acks` once per tick; at
 *   most WINDOW messages unacknowledged. No `flush()` per message or burst: nats.js coalesces
 *   publishes into 32 KiB writes on a microtask itself, and the subscriber's count, which
 *   comes after the server delivered everything, ends the burst (a flush would only add a
 *   PING/PONG). Both sides flush once after subscribing, so no message can precede a SUB.
 * `nats` is an optional dependency: imported when a session opens, and a missing one (or a
 * missing nats-server) makes the peer unavailable, with how to install it.
 */
import { join } from "node:path";
import type { NatsConnection } from "nats";
import { CumulativeAcks } from "../lib/acks.ts";
import { spawnFixture } from "../lib/child.ts";
import { RAW_128 } from "../lib/payload.ts";
import { missingPackage } from "../lib/optional-package.ts";
import { missingServer, NATS_SERVER, startNatsServer, type Server } from "../lib/servers.ts";
import type { PeerEnv, RoundTripPeer, RoundTripSession, StreamPeer, StreamSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/nats-fixture.ts");
/** Unacknowledged messages at most: as the hermes stream's largest window. */
const WINDOW = 8192;
/** Messages published per synchronous batch (one microtask flush of nats.js takes them all). */
const BATCH = 256;
/** `PUB bench.stream 128\r\n` + payload + `\r\n`. */
const PUB_FRAME_BYTES = "PUB bench.stream 128\r\n".length + RAW_128.length + 2;

const unavailable = () => missingPackage("nats") ?? missingServer(NATS_SERVER);

/** A server, the peer process and this side's connection, torn down in reverse on failure or dispose. */
async function openNats(env: PeerEnv, mode: "echo" | "sink") {
  const { connect } = await import("nats");
  const server: Server = await startNatsServer(env.placement, env.dir);
  try {
    const fixture = await spawnFixture(FIXTURE, [server.url, mode], env.placement);
    try {
      const nc: NatsConnection = await connect({ servers: server.url, name: "bench-harness", reconnect: false });
      const dispose = async () => {
        try {
          await nc.close();
        } finally {
          try {
            await fixture[Symbol.asyncDispose]();
          } finally {
            await server[Symbol.asyncDispose]();
          }
        }
      };
      return { nc, fixture, dispose };
    } catch (error) {
      await fixture[Symbol.asyncDispose]();
      throw error;
    }
  } catch (error) {
    await server[Symbol.asyncDispose]();
    throw error;
  }
}

export const natsRequest: RoundTripPeer = {
  name: "NATS request",
  unavailable,
  async open(env: PeerEnv): Promise<RoundTripSession> {
    const { nc, dispose } = await openNats(env, "echo");
    const options = { timeout: 10_000 };
    return {
      async roundTrip() {
        const reply = await nc.request("bench.echo", RAW_128, options);
        if (reply.data.length !== RAW_128.length) throw new Error(`NATS echo answered ${reply.data.length} bytes`);
      },
      [Symbol.asyncDispose]: dispose,
    };
  },
};

export const natsStream: StreamPeer = {
  name: "NATS publish",
  unavailable,
  async open(env: PeerEnv): Promise<StreamSession> {
    const { nc, fixture, dispose } = await openNats(env, "sink");
    const acks = new CumulativeAcks();
    const decoder = new TextDecoder();
    fixture.exited.then((code) => acks.fail(new Error(`NATS sink exited (${code})`)));
    nc.closed().then((error) => acks.fail(error ?? new Error("NATS connection closed")));
    nc.subscribe("bench.acks", { callback: (error, msg) => error || acks.update(Number(decoder.decode(msg.data))) });
    await nc.flush();
    const sendSome = (max: number) => {
      const k = Math.min(BATCH, max);
      for (let i = 0; i < k; i++) nc.publish("bench.stream", RAW_128);
      return k;
    };
    return {
      frameBytes: PUB_FRAME_BYTES,
      send: (n) => acks.burst(n, WINDOW, sendSome),
      async received() {
        return Number(await fixture.ask("count"));
      },
      [Symbol.asyncDispose]: dispose,
    };
  },
};
