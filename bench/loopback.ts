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
 * - `gateway`: the gateway's app (hono, its middleware, the invoke handler, its event log)
 *   answering the seed request of bench/gateway-load.ts through `app.fetch`, its node linked to
 *   the calculator actor's runtime as in `actor`. The baseline is the bare handler of
 *   fixtures/bare-http-fixture.ts on the same Request, so HTTP parsing (native in Bun.serve)
 *   is in neither: the difference is the gateway's JavaScript and the mesh path behind it.
 *
 * Run: `bun bench/loopback.ts [transport|actor|gateway] [round trips per round] [rounds] [codec] [in flight]`
 * (codec: msgpackr-records, the default, or msgpack; in flight: more than 1 also measures that
 * many round trips pipelined, from as many loops at once, after the sequential ones).
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
import calculator from "../actors/calculator.ts";
import { ActorRuntime } from "../src/actor/actor-runtime.ts";
import { defineActor, type ActorDefinition } from "../src/actor/define-actor.ts";
import { evaluateExpression } from "../src/agent/calculator.ts";
import { createGatewayApp } from "../src/gateway/gateway-app.ts";
import { EventLog } from "../src/observability/event-log.ts";
import { SEED_REQUEST } from "./lib/invoke-seed.ts";
import { PAYLOAD_128, RAW_128 } from "./lib/payload.ts";

const [mode = "transport", perRoundText = "100000", roundsText = "3", codec = "msgpackr-records", lanesText = "1"] = process.argv.slice(2);
const perRound = Number(perRoundText);
const rounds = Number(roundsText);
const lanes = Number(lanesText);

/** A byte stream whose writes reach `peer()` on the next macrotask, copied (the writer reuses its buffer). */
function handOffTo(peer: () => Connection): ByteStream {
  return {
    write(data, offset, length) {
      const copy = data.slice(offset, offset + length);
      setImmediate(() => peer().handleData(copy));
      return length;
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

/**
 * An actor's runtime with its event log on a mesh node of `transport`, and a client node as
 * joinMesh makes one (the scheduler picks, and hears how each request turned out).
 */
async function actorAndClient(logDir: string, name: string, actor: ActorDefinition, clientAddress: string): Promise<{ client: MeshNode; registry: Registry }> {
  const transport = inProcessTransport();
  const registry = new Registry();
  registry.upsert({
    name, instance: 0, address: name, id: "00000000-0000-4000-8000-000000000000", socket: `in-process:${name}`,
    capabilities: [...(actor.capabilities ?? [])], subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now(), kind: "actor",
  });
  const events = new EventLog(join(logDir, `${name}.jsonl`), { actor: name });
  const runtime = new ActorRuntime(actor, { name, instance: 0, address: name, log: createLogger({ actor: name }), events });
  const serverScheduler = schedulerFromEnv();
  const server = await MeshNode.start({ address: name, socketPath: `in-process:${name}`, transport, routes: registry, pick: schedulerPicker(serverScheduler), ...runtime.nodeHandlers });
  await runtime.start(server);
  const scheduler = schedulerFromEnv();
  let client!: MeshNode;
  client = await MeshNode.start({
    address: clientAddress, transport, routes: registry,
    pick: schedulerPicker(scheduler, (to) => client.inFlightTo(to)),
    onOutcome: (to, ok, latencyMs) => scheduler.record(to, { ok, latencyMs }),
  });
  return { client, registry };
}

async function actorLoop(logDir: string): Promise<() => Promise<void>> {
  const { client } = await actorAndClient(logDir, "echo", defineActor({ onRequest: (request) => request.payload }), "loop-client");
  const route = { target_agent: "echo" };
  const options = { timeoutMs: 10_000 };
  return async () => {
    await client.request(route, PAYLOAD_128, options);
  };
}

const INVOKE_URL = "http://127.0.0.1:8000/hermes/v1/invoke";
const SEED_BODY = JSON.stringify(SEED_REQUEST);
const BINDINGS = { server: undefined, listener: "tcp" } as const;

const SEED_HEADERS = { "content-type": "application/hermes+json", "content-length": String(Buffer.byteLength(SEED_BODY)), host: "127.0.0.1:8000" };

/** A POST of the seed request with the headers wrk sends. */
function seedRequest(): Request {
  return new Request(INVOKE_URL, { method: "POST", headers: SEED_HEADERS, body: SEED_BODY });
}

/** The gateway app with its event log, its node the client of an in-process calculator actor. */
async function gatewayLoop(logDir: string): Promise<() => Promise<void>> {
  const { client, registry } = await actorAndClient(logDir, "calculator", calculator, "gateway");
  const events = new EventLog(join(logDir, "gateway.jsonl"), { actor: "gateway" });
  const app = createGatewayApp({ node: client, registry, meshName: "loopback", stats: async () => ({}), host: "127.0.0.1", events });
  return async () => {
    const answer = await app.fetch(seedRequest(), BINDINGS);
    if (answer.status !== 200) throw new Error(`the gateway answered HTTP ${answer.status}: ${await answer.text()}`);
    answered += (await answer.text()).length;
  };
}

/** The bare handler of fixtures/bare-http-fixture.ts on the same Request. */
function bareHttpLoop(): () => Promise<void> {
  return async () => {
    const request = seedRequest();
    const { meta, payload } = (await request.json()) as { meta: Record<string, unknown>; payload: { task_id?: string; expression: string } };
    const answer = Response.json({
      meta: { ...meta, msg_type: 2, sender_id: meta.receiver_id, receiver_id: meta.sender_id },
      payload: { task_id: payload.task_id, result: evaluateExpression(payload.expression), expression: payload.expression },
    });
    answered += (await answer.text()).length;
  };
}

/** Characters of HTTP answers read, so they are used. */
let answered = 0;

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

/** `n` round trips, one after the other, or from `inFlight` loops at once (pipelined). */
async function measure(roundTrip: () => Promise<void>, n: number, inFlight = 1): Promise<{ us: number; cpuUs: number }> {
  const t0 = Bun.nanoseconds();
  const cpu0 = process.cpuUsage();
  let started = 0;
  const lane = async () => {
    while (started < n) {
      started++;
      await roundTrip();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const cpu = process.cpuUsage(cpu0);
  return { us: (Bun.nanoseconds() - t0) / n / 1000, cpuUs: (cpu.user + cpu.system) / n };
}

if (mode !== "transport" && mode !== "actor" && mode !== "gateway") throw new Error(`unknown mode ${mode}: transport, actor or gateway`);
const logDir = mkdtempSync(join(tmpdir(), "hermes-loopback-"));
try {
  const raw = mode === "gateway" ? bareHttpLoop() : rawLoop();
  const hermes = mode === "actor" ? await actorLoop(logDir) : mode === "gateway" ? await gatewayLoop(logDir) : await transportLoop();
  for (const roundTrip of [raw, hermes]) await measure(roundTrip, 20_000); // warm-up
  for (let round = 1; round <= rounds; round++) {
    const base = await measure(raw, perRound);
    const path = await measure(hermes, perRound);
    if (lanes > 1) {
      const pipelined = await measure(hermes, perRound, lanes);
      console.log(`round ${round}: hermes ${mode} with ${lanes} in flight ${pipelined.us.toFixed(2)} us per round trip (CPU ${pipelined.cpuUs.toFixed(2)} us)`);
    }
    console.log(
      `round ${round}: hermes ${mode} (${codec}) ${path.us.toFixed(2)} us per round trip (CPU ${path.cpuUs.toFixed(2)} us), ` +
        `${mode === "gateway" ? "bare handler" : "raw hand-off"} ${base.us.toFixed(2)} us (CPU ${base.cpuUs.toFixed(2)} us): ${(path.us - base.us).toFixed(2)} us of hermes JavaScript, both ends`,
    );
  }
  if (mode !== "gateway" && echoed === 0) throw new Error("the raw hand-off echoed nothing");
} finally {
  rmSync(logDir, { recursive: true, force: true });
}
process.exit(0);
