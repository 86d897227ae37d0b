/**
 * The transport conformance suite (test/conformance/transport-suite.ts) over Bun's Unix socket
 * and TCP transports, against test/mesh/echo-server-fixture.ts in another process (a Bun one, or
 * a Deno one with HERMES_TEST_RECEIVER_RUNTIME=deno); plus the cases that belong to this
 * implementation rather than to every transport (codec choice).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Socket, SocketHandler } from "bun";
import { join } from "node:path";
import { formatAddress, parseAddress, type Address, dial } from "../../mesh/socket-transport.ts";
import type { Connection } from "../../mesh/connection.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import type { RegistryEntry } from "../../mesh/registry.ts";
import { RequestChannel } from "../../mesh/requests.ts";
import { describeTransportConformance, type ReceiverSpec, type Relay, type SenderOptions, type TransportUnderTest } from "../conformance/transport-suite.ts";
import { spawnBun, spawnDeno, tempDir, type Child } from "../helpers.ts";

const FIXTURE = join(import.meta.dir, "echo-server-fixture.ts");
/**
 * The runtime of every receiver: `bun` (default) or `deno` (HERMES_TEST_RECEIVER_RUNTIME=deno,
 * set by test/deno/transport-deno.test.ts). The sender side stays in this Bun process.
 */
const RECEIVER_RUNTIME = process.env.HERMES_TEST_RECEIVER_RUNTIME === "deno" ? "deno" : "bun";
/**
 * What the fixture needs of Deno: read (its modules, the socket path), write (Unix sockets and
 * the ledger), env (its settings), net (node:net asks for it, Unix sockets included).
 */
const DENO_RECEIVER_PERMISSIONS = ["--allow-read", "--allow-write", "--allow-env", "--allow-net"];

function spawnReceiver(spec: ReceiverSpec): Child {
  const env = {
    LAYER: spec.layer,
    WINDOW: spec.window === undefined ? "" : String(spec.window),
    LEDGER: spec.ledger ?? "",
    LIFE: String(spec.life ?? 1),
    HOLD: spec.hold ? "1" : "0",
  };
  const args = [spec.address, spec.token];
  return RECEIVER_RUNTIME === "deno" ? spawnDeno(FIXTURE, args, DENO_RECEIVER_PERMISSIONS, env) : spawnBun(FIXTURE, args, env);
}

/** A dial-only MeshNode named `sender` whose only route is the receiver at a socket endpoint (Unix path or TCP). */
async function startSender(address: string, options: SenderOptions): Promise<MeshNode> {
  const where = parseAddress(address);
  const entry: RegistryEntry = {
    name: "receiver", instance: 0, address: "receiver", id: "receiver", socket: "path" in where ? where.path : address, capabilities: [], subscriptions: [],
    health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now(),
  };
  return MeshNode.start({
    address: "sender",
    routes: {
      resolveTarget: (target) => (target === "receiver" ? [entry] : []),
      withCapability: () => [],
      subscribersOf: () => [],
      known: () => ["receiver"],
      byAddress: (a) => (a === "receiver" ? entry : undefined),
    },
    pick: (candidates) => candidates[0],
    ...options,
  });
}

type RelaySide = { peer?: Socket<RelaySide>; early: Uint8Array[]; out: Uint8Array[] };

/** Writes with Bun's no-buffering socket.write: what the kernel did not take waits for drain. */
function relayWrite(socket: Socket<RelaySide>, chunk: Uint8Array): void {
  const out = socket.data.out;
  if (out.length > 0) {
    out.push(Buffer.from(chunk));
    return;
  }
  const written = socket.write(chunk);
  if (written < chunk.length) out.push(Buffer.from(chunk.subarray(Math.max(0, written))));
}

function relayDrain(socket: Socket<RelaySide>): void {
  const out = socket.data.out;
  while (out.length > 0) {
    const chunk = out[0]!;
    const written = socket.write(chunk);
    if (written < chunk.length) {
      out[0] = chunk.subarray(Math.max(0, written));
      return;
    }
    out.shift();
  }
}

/** A byte relay over Bun sockets (Unix or TCP) from a new listening address to `target`. */
async function bunSocketRelay(target: Address, at: Address): Promise<Relay> {
  const live = new Set<Socket<RelaySide>>();
  const upstreamHandler: SocketHandler<RelaySide> = {
    open(upstream) {
      live.add(upstream);
      const client = upstream.data.peer!;
      for (const chunk of client.data.early) relayWrite(upstream, chunk);
      client.data.early = [];
      client.data.peer = upstream;
    },
    data: (upstream, chunk) => relayWrite(upstream.data.peer!, chunk),
    drain: relayDrain,
    close(upstream) {
      live.delete(upstream);
      upstream.data.peer?.end();
    },
    error(upstream) {
      upstream.end();
    },
  };
  const clientHandler: SocketHandler<RelaySide> = {
    open(client) {
      client.data = { early: [], out: [] };
      live.add(client);
      const data: RelaySide = { peer: client, early: [], out: [] };
      const connecting = "path" in target
        ? Bun.connect<RelaySide>({ unix: target.path, data, socket: upstreamHandler })
        : Bun.connect<RelaySide>({ hostname: target.host, port: target.port, data, socket: upstreamHandler });
      connecting.catch(() => client.end());
    },
    data(client, chunk) {
      const upstream = client.data.peer;
      if (upstream) relayWrite(upstream, chunk);
      else client.data.early.push(Buffer.from(chunk));
    },
    drain: relayDrain,
    close(client) {
      live.delete(client);
      client.data.peer?.end();
    },
    error(client) {
      client.end();
    },
  };
  let stop: () => void;
  let bound: Address;
  if ("path" in at) {
    const server = Bun.listen<RelaySide>({ unix: at.path, socket: clientHandler });
    stop = () => server.stop(true);
    bound = at;
  } else {
    const server = Bun.listen<RelaySide>({ hostname: at.host, port: at.port, socket: clientHandler });
    stop = () => server.stop(true);
    bound = { host: at.host, port: server.port };
  }
  const cut = () => {
    for (const socket of [...live]) socket.terminate();
    live.clear();
  };
  return {
    address: formatAddress(bound),
    cut,
    async [Symbol.asyncDispose]() {
      cut();
      stop();
    },
  };
}

let relays = 0;
let sockets = 0;

// `satisfies`: the codec cases below use the Connection their dials return.
const unix = {
  listenAddress: (dir) => `unix:${join(dir, `r${++sockets}.sock`)}`,
  spawnReceiver,
  dial: (address, options) => dial(parseAddress(address), options),
  delivery: {
    startSender,
    relay: (address, dir) => bunSocketRelay(parseAddress(address), { path: join(dir, `relay${++relays}.sock`) }),
  },
} satisfies TransportUnderTest;

const tcp = {
  listenAddress: () => "tcp://127.0.0.1:0",
  spawnReceiver,
  dial: (address, options) => dial(parseAddress(address), options),
  delivery: {
    startSender,
    relay: (address, dir) => bunSocketRelay(parseAddress(address), { host: "127.0.0.1", port: 0 }),
  },
} satisfies TransportUnderTest;

describeTransportConformance("transport over unix", unix);
describeTransportConformance("transport over tcp", tcp);

for (const [kind, transport] of [["unix", unix], ["tcp", tcp]] as const) {
  describe(`codecs over ${kind}`, () => {
    const dir = tempDir();
    let receiver: Child;
    let address: string;
    const connections: Connection[] = [];

    beforeAll(async () => {
      receiver = transport.spawnReceiver({ layer: "connection", address: transport.listenAddress(dir.path), token: "s3cret" });
      address = (await receiver.waitForLine(/^ready /)).slice(6);
    });

    afterAll(async () => {
      await Promise.all(connections.map((c) => c.close()));
      await receiver?.[Symbol.asyncDispose]();
      dir[Symbol.dispose]();
    });

    test("hermes-envelope is negotiated by default, records or plain msgpack when only they are offered, and each carries every shape", async () => {
      const channels: RequestChannel<Connection>[] = [];
      for (const codecs of [undefined, ["msgpackr-records", "msgpack"], ["msgpack"]]) {
        const connection = await transport.dial(address, { node: "client", token: "s3cret", ...(codecs && { codecs }) });
        connections.push(connection);
        channels.push(new RequestChannel(connection, "client"));
      }
      expect(channels.map((c) => c.connection.codec)).toEqual(["hermes-envelope", "msgpackr-records", "msgpack"]);
      for (const channel of channels) {
        // More shapes than msgpackr-records has ids (32), so ids are reused and redefined in turn.
        const replies = await Promise.all(
          Array.from({ length: 200 }, (_, i) => channel.request({ target_agent: "echo" }, { i, shape: { [`k${i % 40}`]: i } }, { timeoutMs: 5000 })),
        );
        expect(replies.filter((r, i) => JSON.stringify(r.payload) !== JSON.stringify({ i, shape: { [`k${i % 40}`]: i } }))).toEqual([]);
      }
    });
  });
}
