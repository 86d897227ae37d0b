/**
 * Ping-pong and stream peer, Redis Streams with consumer-group acknowledgements: Bun's built-in
 * RedisClient (it has XADD, XREADGROUP, XACK and pipelines automatically: commands issued in
 * one tick go out in one write) against a local redis-server that each session starts on a
 * free loopback port without persistence (bench/lib/servers.ts), pinned with the peer process.
 * - stream: the producer (here) XADDs 128-byte payloads (`MAXLEN ~ 100000`, the docs' capped
 *   stream; never below the unacknowledged window), pipelined, at most WINDOW unacknowledged;
 *   the consumer (bench/fixtures/redis-fixture.ts) reads with XREADGROUP COUNT 1024 BLOCK 0,
 *   acknowledges each batch with one XACK and publishes its cumulative count on `bench:acks`,
 *   which a subscribed connection here turns into the burst's end.
 * - request: a request stream and a reply stream. A round trip is an XREAD BLOCK on
 *   `bench:rep` from the last reply id (its own connection: a blocked connection runs nothing
 *   else) and an XADD to `bench:req`; the echo reads it with XREADGROUP, XADDs the payload to
 *   `bench:rep` and XACKs. Four hops through the server per round trip, by design of the
 *   pattern: what a Redis-based request/reply between actors costs.
 */
import { RedisClient } from "bun";
import { join } from "node:path";
import { CumulativeAcks } from "../lib/acks.ts";
import { spawnFixture } from "../lib/child.ts";
import { missingServer, REDIS_SERVER, startRedisServer } from "../lib/servers.ts";
import { TEXT_128 } from "../lib/text-payload.ts";
import type { PeerEnv, RoundTripPeer, RoundTripSession, StreamPeer, StreamSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/redis-fixture.ts");
/** Unacknowledged messages at most: as the hermes stream's largest window. */
const WINDOW = 8192;
/** XADDs per synchronous batch: one auto-pipelined write. */
const BATCH = 256;
/** Approximate cap of the streams: far above WINDOW, so no unread entry is ever trimmed. */
const CAP = 100_000;

const unavailable = () => missingServer(REDIS_SERVER);
/** A server that went away fails the measurement at once instead of queueing commands for a reconnect. */
const NO_RECONNECT = { autoReconnect: false, enableOfflineQueue: false };

/** RESP bytes of a command, as the client writes it. */
function respBytes(args: readonly (string | number)[]): number {
  let bytes = `*${args.length}\r\n`.length;
  for (const arg of args) {
    const length = Buffer.byteLength(String(arg));
    bytes += `$${length}\r\n`.length + length + 2;
  }
  return bytes;
}

/** A server, the peer process and `clients` connections of this side, torn down in reverse. */
async function openRedis(env: PeerEnv, mode: "echo" | "sink", clients: number) {
  const server = await startRedisServer(env.placement, env.dir);
  const opened: RedisClient[] = [];
  let fixture: Awaited<ReturnType<typeof spawnFixture>> | undefined;
  const dispose = async () => {
    for (const client of opened) client.close();
    try {
      await fixture?.[Symbol.asyncDispose]();
    } finally {
      await server[Symbol.asyncDispose]();
    }
  };
  try {
    fixture = await spawnFixture(FIXTURE, [server.url, mode], env.placement);
    for (let i = 0; i < clients; i++) {
      const client = new RedisClient(server.url, NO_RECONNECT);
      opened.push(client);
      await client.connect();
    }
    return { clients: opened, fixture, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

export const redisRequest: RoundTripPeer = {
  name: "Redis streams request",
  unavailable,
  async open(env: PeerEnv): Promise<RoundTripSession> {
    const { clients, fixture, dispose } = await openRedis(env, "echo", 2);
    const [commands, replies] = clients as [RedisClient, RedisClient];
    let lastId = "0-0";
    let gone: Error | undefined;
    let failed: ((error: Error) => void) | undefined;
    fixture.exited.then((code) => {
      gone = new Error(`Redis echo exited (${code})`);
      failed?.(gone);
    });
    return {
      async roundTrip() {
        if (gone) throw gone;
        const { promise: peerGone, reject } = Promise.withResolvers<never>();
        failed = reject;
        const reply = replies.xread("BLOCK", 0, "STREAMS", "bench:rep", lastId);
        commands.xadd("bench:req", "MAXLEN", "~", CAP, "*", "d", TEXT_128).catch(reject);
        const answer = await Promise.race([reply, peerGone]);
        failed = undefined;
        const entries: [string, string[]][] = Array.isArray(answer) ? answer[0][1] : answer["bench:rep"];
        const [id, fields] = entries.at(-1)!;
        if (entries.length !== 1 || fields[1] !== TEXT_128) throw new Error(`Redis echo answered ${entries.length} entries`);
        lastId = id;
      },
      [Symbol.asyncDispose]: dispose,
    };
  },
};

export const redisStream: StreamPeer = {
  name: "Redis streams XADD",
  unavailable,
  async open(env: PeerEnv): Promise<StreamSession> {
    const { clients, fixture, dispose } = await openRedis(env, "sink", 2);
    const [producer, subscriber] = clients as [RedisClient, RedisClient];
    const acks = new CumulativeAcks();
    const fail = (error: Error) => acks.fail(error);
    fixture.exited.then((code) => fail(new Error(`Redis sink exited (${code})`)));
    await subscriber.subscribe("bench:acks", (count) => acks.update(Number(count)));
    const xadd = ["bench:stream", "MAXLEN", "~", CAP, "*", "d", TEXT_128] as const;
    const sendSome = (max: number) => {
      const k = Math.min(BATCH, max);
      for (let i = 0; i < k; i++) producer.xadd(...xadd).catch(fail);
      return k;
    };
    return {
      frameBytes: respBytes(["XADD", ...xadd]),
      send: (n) => acks.burst(n, WINDOW, sendSome),
      async received() {
        return Number(await fixture.ask("count"));
      },
      [Symbol.asyncDispose]: dispose,
    };
  },
};
