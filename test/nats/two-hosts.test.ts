/**
 * One mesh across hosts over NATS JetStream (issue 15), two hosts simulated as two meshes of
 * the same name, each with its own supervisor, directory and actors, on one real nats-server:
 * routing by name, capability and topic from one host to the other, `ps` naming each member's
 * host, and a durable actor on host A killed with SIGKILL under load from host B losing nothing
 * and handling nothing twice.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectHandledOnce, requestKeys, startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";
import { waitFor } from "../helpers.ts";
import { startNatsServers, type NatsServers } from "./nats-server.ts";
import { registryBucket } from "../../mesh/nats-registry.ts";
import { connectMesh } from "../../src/actor/connect-mesh.ts";
import type { Envelope } from "../../mesh/envelope.ts";

let nats: NatsServers;
beforeAll(async () => {
  nats = await startNatsServers();
});
afterAll(async () => {
  await nats?.[Symbol.asyncDispose]();
});

/** A host of mesh `name`: its own supervisor and directory, its actors, the shared NATS server. */
function host(name: string, host: string, children: string, meshSettings = ""): Promise<TestMesh> {
  return startTestMesh(`
mesh: { name: ${name}, transport: nats, nats: { servers: ["${nats.urls[0]}"], host: ${host} }${meshSettings} }
supervisor:
  intensity: 100
  period_ms: 5000
  backoff: { initial_ms: 1, max_ms: 20 }
  children:
${children}
`);
}

const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 8)}`;

describe("one mesh on two hosts over NATS", () => {
  test("name, capability and topic routing cross hosts, and each host sees the other's members", async () => {
    const name = unique("shop");
    await using a = await host(name, "host-a", `    - { actor: echo, module: "{ACTORS}/echo.ts", subscribe: ["orders.#"] }\n    - { actor: who, module: "{FIXTURES}/runtime-info.ts" }`);
    await using b = await host(name, "host-b", `    - { actor: local, module: "{ACTORS}/echo.ts" }`);
    // Host B learns host A's members through the shared registry.
    await waitFor(() => b.mesh.registry.byAddress("echo")?.health === "healthy" && b.mesh.registry.byAddress("who")?.health === "healthy", "host A's actors seen on host B", 15_000);
    expect(b.mesh.registry.byAddress("echo")!.host).toBe("host-a");
    expect(a.mesh.registry.byAddress("local")!.host).toBe("host-b");
    const client = await b.client();
    expect((await client.request("echo", { hello: "from b" }, { timeoutMs: 10_000 })).payload).toEqual({ hello: "from b" });
    const byCapability = (await client.request({ capability: "who" }, {}, { timeoutMs: 10_000 })).payload as { address: string; pid: number };
    expect(byCapability.address).toBe("who");
    expect(byCapability.pid).toBe(a.pid("who"));
    // A topic published on B reaches the subscriber on A.
    for (let i = 0; i < 10; i++) client.publish("orders.new", { i });
    await waitFor(async () => (await client.request("echo", { op: "count" }, { timeoutMs: 10_000 })).payload.events === 10, "10 events at host A's echo", 15_000);
  }, 90_000);

  test("a durable actor on host A killed with SIGKILL under load from host B handles every request once", async () => {
    const name = unique("ledger");
    await using a = await host(name, "host-a", `    - { actor: ledger, module: "{FIXTURES}/ledger.ts" }`);
    await using b = await host(name, "host-b", `    - { actor: local, module: "{ACTORS}/echo.ts" }`);
    await waitFor(() => b.mesh.registry.byAddress("ledger")?.health === "healthy", "the ledger seen on host B", 15_000);
    const client = await b.client();
    const total = 400;
    const load = requestKeys(client, "ledger", total, 50);
    for (const threshold of [50, 200]) {
      await waitFor(() => load.answered() >= threshold && a.mesh.registry.byAddress("ledger")?.health === "healthy", `progress ${threshold} with the ledger up`, 30_000);
      process.kill(a.pid("ledger"), "SIGKILL");
      await waitFor(() => a.mesh.registry.byAddress("ledger")?.health !== "healthy", "the ledger seen down", 10_000);
    }
    await load.done;
    expect(load.answered()).toBe(total);
    await expectHandledOnce(client, "ledger", total);
  }, 120_000);
  test("by capability the first free member takes the job: one frozen with SIGSTOP, the other answers everything; cancels reach the one serving", async () => {
    const name = unique("queue");
    const worker = (actor: string) => `    - { actor: ${actor}, module: "{ACTORS}/echo.ts", capabilities: [work] }`;
    // Heartbeats every 10 s on host A: its frozen worker is not found hung (and killed) during the test.
    await using a = await host(name, "host-a", worker("wa"), ", heartbeat_ms: 10000");
    await using b = await host(name, "host-b", worker("wb"), ", heartbeat_ms: 100");
    await waitFor(() => b.mesh.registry.byAddress("wa")?.health === "healthy", "host A's worker seen on host B", 15_000);
    const client = await b.client();
    // Both answer while both run.
    const before = new Set<unknown>();
    await waitFor(async () => {
      before.add((await client.request({ capability: "work" }, { op: "count" }, { timeoutMs: 10_000 })).payload.address);
      return before.size === 2;
    }, "answers from both workers", 20_000);
    const frozen = a.pid("wa");
    process.kill(frozen, "SIGSTOP");
    try {
      // Routed while wa still looks healthy: a router picking an instance would leave some with it.
      const answers = await Promise.all(Array.from({ length: 20 }, () => client.request({ capability: "work" }, { op: "count" }, { timeoutMs: 20_000 })));
      expect(new Set(answers.map((answer) => answer.payload.address))).toEqual(new Set(["wb"]));
      // A cancel of a request by capability reaches the member serving it (wb): its handler ends.
      const controller = new AbortController();
      const slow = client.request({ capability: "work" }, { sleep_ms: 60_000 }, { timeoutMs: 90_000, signal: controller.signal }).catch((error) => error);
      await waitFor(() => b.mesh.registry.byAddress("wb")?.inFlight === 1, "wb serving the slow request", 15_000);
      controller.abort();
      await slow;
      await waitFor(() => b.mesh.registry.byAddress("wb")?.inFlight === 0, "the cancel at wb", 15_000);
    } finally {
      process.kill(frozen, "SIGCONT");
    }
    expect(a.pid("wa")).toBe(frozen);
  }, 120_000);

  test("the server back without its store: stream, consumers and the registry bucket are made again, and host B reaches host A's actor", async () => {
    await using own = await startNatsServers(1);
    const server = own.servers[0]!;
    const name = unique("wiped");
    const on = (hostName: string, children: string) => startTestMesh(`
mesh: { name: ${name}, transport: nats, nats: { servers: ["${server.url}"], host: ${hostName} } }
supervisor:
  children:
${children}
`);
    await using a = await on("host-a", `    - { actor: echo, module: "{ACTORS}/echo.ts" }`);
    await using b = await on("host-b", `    - { actor: local, module: "{ACTORS}/echo.ts" }`);
    await waitFor(() => b.mesh.registry.byAddress("echo")?.health === "healthy", "host A's echo seen on host B", 15_000);
    const client = await b.client();
    expect((await client.request("echo", { n: 1 }, { timeoutMs: 10_000 })).payload).toEqual({ n: 1 });
    await server.kill();
    server.wipe();
    await server.start();
    expect((await client.request("echo", { n: 2 }, { timeoutMs: 30_000 })).payload).toEqual({ n: 2 });
    // The registry bucket is back with both hosts' members in it: a supervisor that starts now learns them.
    await waitFor(async () => {
      const { connect } = await import("@nats-io/transport-node");
      const { Kvm } = await import("@nats-io/kv");
      const nc = await connect({ servers: server.url });
      try {
        // echo and local, each rewritten by its own host's supervisor.
        return (await (await new Kvm(nc).open(registryBucket(name))).status()).values >= 2;
      } catch {
        return false;
      } finally {
        await nc.close();
      }
    }, "the registry bucket made again", 20_000);
    expect(a.mesh.registry.byAddress("local")?.health).toBe("healthy");
  }, 90_000);

  test("a program joins through NATS alone (no supervisor, no mesh directory): requests, and events on its subscriptions", async () => {
    const name = unique("remote");
    await using a = await host(name, "host-a", `    - { actor: echo, module: "{ACTORS}/echo.ts" }`);
    const remote = await connectMesh({ nats: { servers: nats.urls, mesh: name }, name: "remote" });
    try {
      expect((await remote.request("echo", { from: "nowhere" }, { timeoutMs: 10_000 })).payload).toEqual({ from: "nowhere" });
      const seen: Envelope[] = [];
      const stop = await remote.subscribe("alerts.#", (event) => seen.push(event));
      // Host A learns the remote client's subscription through the registry bucket, then routes to it.
      await waitFor(() => a.mesh.registry.byAddress(remote.address)?.subscriptions.includes("alerts.#") === true, "the remote client's subscription on host A", 15_000);
      const local = await a.client();
      for (let i = 0; i < 5; i++) local.publish("alerts.disk", { i });
      await waitFor(() => seen.length === 5, "5 events at the remote client", 15_000);
      expect(seen.map((e) => e.payload.i)).toEqual([0, 1, 2, 3, 4]);
      await stop();
    } finally {
      await remote.close();
    }
    // Gone from the mesh once it closed.
    await waitFor(() => a.mesh.registry.byAddress(remote.address) === undefined, "the remote client forgotten on host A", 15_000);
  }, 90_000);
});
