/**
 * A mesh over a three-server NATS cluster on loopback (issue 15): the mesh's stream and
 * registry bucket replicated three times, and one server killed with SIGKILL while requests
 * stream through: every request is answered, each handled once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { expectHandledOnce, requestKeys, startTestMesh } from "../actor/mesh-harness.ts";
import { waitFor } from "../helpers.ts";
import { startNatsServers, type NatsServers } from "./nats-server.ts";

let cluster: NatsServers;
beforeAll(async () => {
  cluster = await startNatsServers(3);
  // JetStream answers once the cluster has elected its meta leader.
  const nc = await connect({ servers: cluster.urls });
  try {
    const ready = () => jetstreamManager(nc).then((jsm) => jsm.getAccountInfo()).then(() => true, () => false);
    await waitFor(ready, "JetStream ready in the cluster", 30_000);
  } finally {
    await nc.close();
  }
}, 60_000);
afterAll(async () => {
  await cluster?.[Symbol.asyncDispose]();
});

test("one of three servers killed with SIGKILL mid-stream: every request answered, each handled once", async () => {
  const servers = JSON.stringify(cluster.urls);
  await using t = await startTestMesh(`
mesh: { name: cluster-${Math.random().toString(36).slice(2, 8)}, transport: nats, nats: { servers: ${servers}, replicas: 3, host: one } }
supervisor:
  children:
    - { actor: ledger, module: "{FIXTURES}/ledger.ts" }
`);
  const client = await t.client();
  const total = 300;
  const load = requestKeys(client, "ledger", total, 25);
  await waitFor(() => load.answered() >= 75, "a quarter answered", 30_000);
  await cluster.servers[0]!.kill();
  await load.done;
  expect(load.answered()).toBe(total);
  await expectHandledOnce(client, "ledger", total);
}, 120_000);
