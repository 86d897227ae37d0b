/**
 * A receiver in its own process: the reference implementation of the receiver contract of the
 * transport conformance suite (test/conformance/transport-suite.ts), also used by other live
 * tests. Argv: <address> [requireToken]. Runtime-neutral: it runs on Bun (Bun's sockets) and on
 * Deno (node:net), started by test/mesh/transport.test.ts with the Deno permissions it needs.
 *
 * Environment:
 * - `LAYER`: `connection` (default) serves every accepted connection with a RequestChannel;
 *   `mesh` is a MeshNode named `receiver` (redelivery, dedupe) listening at a Unix path or TCP port.
 * - `WINDOW`: the credit window it offers. `LEDGER`: a file it appends one line to per event.
 *   `LIFE`: the number of this start (1 = first), written in ledger lines. `HOLD=1`: requests
 *   `{ hold: true }` wait for a `{ release: true }` request (otherwise they answer at once).
 * - `PING_MS`, `FRAME_TIMEOUT_MS`, `HELLO_TIMEOUT_MS`: connection options (connection layer).
 *
 * Handlers by payload: `{ progress: n }` sends n progress messages first, `{ throw: "msg" }`
 * throws, `{ sleep_ms }` waits (honouring cancel), `{ hold: true }` see HOLD, `{ release: true }`
 * releases every held request and answers `{ released: n }`, `{ die: true }` kills its own
 * process with SIGKILL (a poison message); anything else is echoed unchanged.
 *
 * Stdout: `ready <address>` once listening; `sleeping <message_id> <trace_id>` and
 * `cancelled <message_id> <trace_id>` around a sleep. Ledger lines (written with a synchronous
 * append, so they survive the SIGKILL that may follow): `begin <life> <message_id> <attempt> <key>`
 * when a handler starts (`key` is `payload.key` or `-`), and in the mesh layer
 * `seen <life> <message_id> <state>` when a redelivery is found in the dedupe memory.
 */
import { appendFileSync } from "node:fs";
import { formatAddress, parseAddress, listen } from "../../mesh/socket-transport.ts";
import { DedupeCache, type DedupeEntry, type DedupeStore } from "../../mesh/dedupe-cache.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import { RequestChannel, type RequestHandler } from "../../mesh/requests.ts";
import type { Envelope } from "../../mesh/envelope.ts";

const [addressText, token] = process.argv.slice(2);
const address = parseAddress(addressText!);
const env = process.env;
const life = env.LIFE ?? "1";
const window = env.WINDOW ? Number(env.WINDOW) : undefined;
const holding = env.HOLD === "1";
const ledgerFile = env.LEDGER;

function ledger(line: string): void {
  if (ledgerFile) appendFileSync(ledgerFile, `${line}\n`);
}

const held = new Set<() => void>();

const handle: RequestHandler = async (request, context) => {
  const payload = request.payload;
  ledger(`begin ${life} ${request.message_id} ${request.attempt ?? 1} ${payload.key ?? "-"}`);
  if (payload.die === true) process.kill(process.pid, "SIGKILL");
  if (payload.release === true) {
    const released = held.size;
    for (const release of held) release();
    held.clear();
    return { released };
  }
  if (payload.hold === true && holding) await new Promise<void>((resolve) => held.add(resolve));
  if (typeof payload.progress === "number") for (let i = 1; i <= payload.progress; i++) context.progress({ step: i });
  if (typeof payload.throw === "string") throw new Error(payload.throw);
  if (typeof payload.sleep_ms === "number") {
    console.log(`sleeping ${request.message_id} ${request.trace_id}`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, payload.sleep_ms as number);
      context.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        console.log(`cancelled ${request.message_id} ${request.trace_id}`);
        resolve();
      });
    });
  }
  return payload;
};

/** The node's dedupe memory, telling the ledger whenever a redelivery is found in it. */
class LedgerDedupe implements DedupeStore {
  #inner = new DedupeCache();
  lookup(id: string): DedupeEntry | undefined {
    const entry = this.#inner.lookup(id);
    if (entry) ledger(`seen ${life} ${id} ${entry.state}`);
    return entry;
  }
  begin(id: string, now?: number): void {
    this.#inner.begin(id, now);
  }
  complete(id: string, answer?: Envelope): void {
    this.#inner.complete(id, answer);
  }
  forget(id: string): void {
    this.#inner.forget(id);
  }
  releaseAnswer(id: string): void {
    this.#inner.releaseAnswer(id);
  }
}

let stop: () => Promise<void>;
if (env.LAYER === "mesh") {
  const node = await MeshNode.start({
    address: "receiver",
    // An endpoint of the socket transport: a Unix path or tcp://host:port.
    socketPath: "path" in address ? address.path : formatAddress(address),
    // Answers go back on the connection their request came on: no routes needed.
    routes: { resolveTarget: () => [], withCapability: () => [], subscribersOf: () => [], known: () => [], byAddress: () => undefined },
    pick: () => undefined,
    ...(token && { token }),
    ...(window !== undefined && { window }),
    dedupe: new LedgerDedupe(),
    onRequest(served) {
      Promise.resolve(handle(served.request, served)).then((result) => served.respond(result), (error) => served.fail(error));
      served.startDeadline();
    },
  });
  stop = () => node.close();
  console.log(`ready ${node.endpoint!.startsWith("tcp://") ? node.endpoint : formatAddress(address)}`);
} else {
  const listener = await listen(address, {
    node: "echo",
    ...(token && { requireToken: token }),
    ...(window !== undefined && { window }),
    pingIntervalMs: Number(env.PING_MS ?? 5000),
    frameTimeoutMs: Number(env.FRAME_TIMEOUT_MS ?? 30000),
    helloTimeoutMs: Number(env.HELLO_TIMEOUT_MS ?? 5000),
    onConnection(connection) {
      new RequestChannel(connection, "echo", handle);
    },
  });
  stop = () => listener.close();
  console.log(`ready ${formatAddress(listener.address)}`);
}
process.on("SIGTERM", async () => {
  await stop();
  process.exit(0);
});
