/**
 * The JavaScript cost of one request round trip, without the kernel: both ends in this one
 * process, over Connections whose byte streams hand each written chunk to the other side on the
 * next macrotask (setImmediate), as a socket's data callback would come. Everything of the
 * hermes path runs (envelopes, ids, codec, framing, write coalescing, acks, credit,
 * validation, the request promise), both ends on one thread, so a CPU profile of this process
 * shows all of it, and taking one step out shows what it cost. The baseline is the same
 * hand-off with raw bytes and a promise per round trip, measured in the same run, interleaved.
 *
 * - `transport`: a RequestChannel and an echo RequestChannel over one Connection pair.
 * - `actor`: the actor path, a mesh node as connectMesh makes it (scheduler, outcomes) and an
 *   echo actor's runtime (mailbox, handler context, dedupe memory, event log) on its own mesh
 *   node, linked through an in-process transport.
 *
 * Run: `bun bench/loopback.ts [transport|actor] [round trips per round] [rounds] [codec]`
 * (codec: msgpackr-records, the default, or msgpack).
 * Profile: `bun --cpu-prof-md --cpu-prof-dir=/tmp/lp bench/loopback.ts actor 300000 1`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Connection, type ByteStream } from "../mesh/connection.ts";
import { ErrorCode, HermesError } from "../mesh/errors.ts";
import { createLogger } from "../mesh/logger.ts";
import { MeshNode } from "../mesh/mesh-node.ts";
import { Registry } from "../mesh/registry.ts";
import { RequestChannel } from "../mesh/requests.ts";
import { schedulerFromEnv, schedulerPicker } from "../mesh/routing.ts";
import type { LinkSettings, MeshLink, MeshTransport } from "../mesh/transport.ts";
import { ActorRuntime } from "../src/actor/actor-runtime.ts";
import { defineActor } from "../src/actor/define-actor.ts";
import { EventLog } from "../src/observability/event-log.ts";
import { PAYLOAD_128, RAW_128 } from "./lib/payload.ts";

const [mode = "transport", perRoundText = "100000", roundsText = "3", codec = "msgpackr-records"] = process.argv.slice(2);
const perRound = Number(perRoundText);
const rounds = Number(roundsText);

/** A byte stream whose writes reach `peer()` on the next macrotask, copied (the writer reuses its buffer). */
function handOffTo(peer: () => Connection): ByteStream {
  return {
    write(data) {
      const copy = data.slice();
      setImmediate(() => peer().handleData(copy));
      return data.length;
    },
    end() {},
  };
}

/** Two Connections, one each way, handing chunks over (the dialer's codec list is only `codec`). */
function connectionPair(dialerSettings: LinkSettings, acceptorSettings: LinkSettings): { dialer: Connection; acceptor: Connection } {
  let dialer!: Connection;
  let acceptor!: Connection;
  dialer = new Connection(handOffTo(() => acceptor), "dialer", { ...dialerSettings, codecs: [codec] });
  acceptor = new Connection(handOffTo(() => dialer), "acceptor", acceptorSettings);
  return { dialer, acceptor };
}

async function transportLoop(): Promise<() => Promise<void>> {
  const { dialer, acceptor } = connectionPair({ node: "loop-client" }, { node: "loop-echo" });
  await dialer.ready;
  const channel = new RequestChannel(dialer, "loop-client");
  new RequestChannel(acceptor, "loop-echo", (request) => request.payload);
  const route = { target_agent: "loop-echo" };
  const options = { timeoutMs: 10_000 };
  return async () => {
    await channel.request(route, PAYLOAD_128, options);
  };
}

/** Listeners by endpoint; a dial makes a Connection pair and hands the acceptor to the listener. */
function inProcessTransport(): MeshTransport {
  const listeners = new Map<string, LinkSettings & { onLink(link: MeshLink): void }>();
  return {
    name: "in-process",
    async listen(endpoint, options) {
      listeners.set(endpoint, options);
      return { endpoint, close: async () => void listeners.delete(endpoint) };
    },
    async dial(endpoint, options) {
      const listener = listeners.get(endpoint);
      if (!listener) throw new HermesError(ErrorCode.UNAVAILABLE, `nobody listens at ${endpoint}`);
      const { dialer, acceptor } = connectionPair(options, { node: listener.node, ...(listener.window !== undefined && { window: listener.window }) });
      // As the socket transport does: a listener gets a link once its hello is in.
      await Promise.all([acceptor.ready.then(() => listener.onLink(acceptor)), dialer.ready]);
      return dialer;
    },
  };
}

async function actorLoop(logDir: string): Promise<() => Promise<void>> {
  const transport = inProcessTransport();
  const registry = new Registry();
  registry.upsert({
    name: "echo", instance: 0, address: "echo", id: "00000000-0000-4000-8000-000000000000", socket: "in-process:echo",
    capabilities: [], subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now(), kind: "actor",
  });
  const events = new EventLog(join(logDir, "echo.jsonl"), { actor: "echo" });
  const runtime = new ActorRuntime(defineActor({ onRequest: (request) => request.payload }), {
    name: "echo", instance: 0, address: "echo", log: createLogger({ actor: "echo" }), events,
  });
  const serverScheduler = schedulerFromEnv();
  const server = await MeshNode.start({ address: "echo", socketPath: "in-process:echo", transport, routes: registry, pick: schedulerPicker(serverScheduler), ...runtime.nodeHandlers });
  await runtime.start(server);
  // As joinMesh makes a client's node: the scheduler picks, and hears how each request turned out.
  const scheduler = schedulerFromEnv();
  let client!: MeshNode;
  client = await MeshNode.start({
    address: "loop-client", transport, routes: registry,
    pick: schedulerPicker(scheduler, (to) => client.inFlightTo(to)),
    onOutcome: (to, ok, latencyMs) => scheduler.record(to, { ok, latencyMs }),
  });
  const route = { target_agent: "echo" };
  const options = { timeoutMs: 10_000 };
  return async () => {
    await client.request(route, PAYLOAD_128, options);
  };
}

/** Bytes the raw echo saw, so its copies are used. */
let echoed = 0;

function rawLoop(): () => Promise<void> {
  let arrived: (() => void) | undefined;
  const toClient = (bytes: Uint8Array) => {
    const copy = bytes.slice();
    setImmediate(() => {
      echoed += copy.length;
      arrived!();
    });
  };
  const toEcho = (bytes: Uint8Array) => {
    const copy = bytes.slice();
    setImmediate(() => toClient(copy));
  };
  return () => {
    const { promise, resolve } = Promise.withResolvers<void>();
    arrived = resolve;
    toEcho(RAW_128);
    return promise;
  };
}

async function measure(roundTrip: () => Promise<void>, n: number): Promise<{ us: number; cpuUs: number }> {
  const t0 = Bun.nanoseconds();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await roundTrip();
  const cpu = process.cpuUsage(cpu0);
  return { us: (Bun.nanoseconds() - t0) / n / 1000, cpuUs: (cpu.user + cpu.system) / n };
}

if (mode !== "transport" && mode !== "actor") throw new Error(`unknown mode ${mode}: transport or actor`);
const logDir = mkdtempSync(join(tmpdir(), "hermes-loopback-"));
try {
  const raw = rawLoop();
  const hermes = mode === "actor" ? await actorLoop(logDir) : await transportLoop();
  for (const roundTrip of [raw, hermes]) await measure(roundTrip, 20_000); // warm-up
  for (let round = 1; round <= rounds; round++) {
    const base = await measure(raw, perRound);
    const path = await measure(hermes, perRound);
    console.log(
      `round ${round}: hermes ${mode} (${codec}) ${path.us.toFixed(2)} us per round trip (CPU ${path.cpuUs.toFixed(2)} us), ` +
        `raw hand-off ${base.us.toFixed(2)} us (CPU ${base.cpuUs.toFixed(2)} us): ${(path.us - base.us).toFixed(2)} us of hermes JavaScript, both ends`,
    );
  }
  if (echoed === 0) throw new Error("the raw hand-off echoed nothing");
} finally {
  rmSync(logDir, { recursive: true, force: true });
}
process.exit(0);
