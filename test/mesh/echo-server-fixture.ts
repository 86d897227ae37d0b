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
 * Stdout: `ready <address>` once listening. The handlers by payload (echo, progress, throw,
 * sleep_ms, hold/release, die), the `sleeping`/`cancelled` lines and the ledger lines (`begin`,
 * and in the mesh layer `seen`) are the contract's: test/conformance/receiver-contract.ts.
 */
import { formatAddress, parseAddress, listen } from "../../mesh/socket-transport.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import { RequestChannel } from "../../mesh/requests.ts";
import { receiverContract } from "../conformance/receiver-contract.ts";

const [addressText, token] = process.argv.slice(2);
const address = parseAddress(addressText!);
const env = process.env;
const window = env.WINDOW ? Number(env.WINDOW) : undefined;
// The handlers, stdout lines and ledger lines of the contract live in receiver-contract.ts.
const { handle, dedupe } = receiverContract({ life: env.LIFE ?? "1", holding: env.HOLD === "1", ledgerFile: env.LEDGER });

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
    dedupe: dedupe(),
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
