/**
 * A receiver in its own process over the NATS transport: the receiver contract of the transport
 * conformance suite (test/conformance/receiver-contract.ts, as test/mesh/echo-server-fixture.ts
 * keeps it over sockets) with a MeshNode or RequestChannel whose transport is natsTransport().
 * Argv: <nats:address> [token]. The token is the NATS credential: the server checks it.
 *
 * Environment: `NATS_URL`, `NATS_MESH` (required); `LAYER` (`connection`: every inbound link served
 * by a RequestChannel named `echo`; `mesh`: a MeshNode named `receiver`), `WINDOW`, `LEDGER`,
 * `LIFE`, `HOLD` as in the socket fixture; `ACK_WAIT_MS`, `MAX_DELIVER` for its consumer.
 * Stdout: `ready <nats:address>` once its consumer pulls.
 */
import { natsTransport } from "../../mesh/nats-transport.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import { RequestChannel } from "../../mesh/requests.ts";
import { receiverContract } from "../conformance/receiver-contract.ts";

const [endpoint, token] = process.argv.slice(2);
const env = process.env;
const window = env.WINDOW ? Number(env.WINDOW) : undefined;
const { handle, dedupe } = receiverContract({ life: env.LIFE ?? "1", holding: env.HOLD === "1", ledgerFile: env.LEDGER });
const node = env.LAYER === "mesh" ? "receiver" : "echo";
const transport = await natsTransport({
  servers: [env.NATS_URL!],
  mesh: env.NATS_MESH!,
  node,
  ...(token && { token }),
  ...(env.ACK_WAIT_MS && { ackWaitMs: Number(env.ACK_WAIT_MS) }),
  ...(env.MAX_DELIVER && { maxDeliver: Number(env.MAX_DELIVER) }),
});

let stop: () => Promise<void>;
if (env.LAYER === "mesh") {
  const mesh = await MeshNode.start({
    address: node,
    socketPath: endpoint!,
    transport,
    // Answers go to each request's reply_to subject: no routes needed.
    routes: { resolveTarget: () => [], withCapability: () => [], subscribersOf: () => [], known: () => [], byAddress: () => undefined },
    pick: () => undefined,
    ...(window !== undefined && { window }),
    dedupe: dedupe(),
    onRequest(served) {
      Promise.resolve(handle(served.request, served)).then((result) => served.respond(result), (error) => served.fail(error));
      served.startDeadline();
    },
  });
  stop = () => mesh.close();
} else {
  const listener = await transport.listen(endpoint!, {
    node,
    ...(window !== undefined && { window }),
    onLink: (link) => new RequestChannel(link, node, handle),
  });
  stop = () => listener.close();
}
console.log(`ready ${endpoint}`);
process.on("SIGTERM", async () => {
  await stop();
  await transport.close();
  process.exit(0);
});
