/**
 * Moving what waits for an instance that went away to a healthy sibling (MeshNode.notifyAway,
 * Router.alternative): which envelopes may move, where to, and what the sender's bookkeeping
 * says after (the outbox's destination, the scheduler's outcome). Real nodes on real sockets;
 * the crashed instance is a node that never acknowledges and is closed.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createEvent, createReply, createRequest, MessageType, type Envelope } from "../../mesh/envelope.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import { Registry, type RegistryEntry } from "../../mesh/registry.ts";
import { Router } from "../../mesh/routing.ts";
import { tempDir, waitFor } from "../helpers.ts";

function entry(address: string, fields: Partial<RegistryEntry> = {}): RegistryEntry {
  const [name, instance = "0"] = address.split("#");
  return {
    name: name!, instance: Number(instance), address, id: `id-${address}`, socket: "", capabilities: ["work"], subscriptions: ["jobs.*"],
    health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 0, durable: false, ...fields,
  };
}

describe("Router.alternative", () => {
  const registry = new Registry();
  for (const address of ["work#0", "work#1", "work#2"]) registry.upsert(entry(address));
  registry.upsert(entry("other", { capabilities: [], subscriptions: ["jobs.*"] }));
  const router = new Router(registry, (candidates) => candidates[0]);

  test("a sibling its own route names: the capability, the pool's name, the topic's subscriber group", () => {
    registry.patch("work#0", { health: "down" });
    expect(router.alternative(createRequest("c", { capability: "work" }, {}), "work#0")?.address).toBe("work#1");
    expect(router.alternative(createEvent("c", { target_agent: "work" }, {}), "work#0")?.address).toBe("work#1");
    // The topic's copy for the pool moves within the pool, never to the other subscriber.
    expect(router.alternative(createEvent("c", { topic: "jobs.a" }, {}), "work#0")?.address).toBe("work#1");
    expect(router.alternative(createEvent("c", { topic: "jobs.a" }, {}), "other")).toBeUndefined();
  });

  test("nothing for an instance named alone, a route that could not have led there, answers, or no healthy sibling", () => {
    expect(router.alternative(createRequest("c", { target_agent: "work#0" }, {}), "work#0")).toBeUndefined();
    expect(router.alternative(createRequest("c", { target_agent: "id-work#0" }, {}), "work#0")).toBeUndefined();
    expect(router.alternative(createRequest("c", { capability: "work" }, {}), "other")).toBeUndefined();
    const request = createRequest("c", { capability: "work" }, {});
    expect(router.alternative(createReply(MessageType.RESPONSE, request, "work#0", {}), "work#0")).toBeUndefined();
    registry.patch("work#1", { health: "starting" });
    registry.patch("work#2", { health: "unhealthy" });
    expect(router.alternative(request, "work#0")).toBeUndefined();
  });
});

describe("MeshNode.notifyAway", () => {
  async function threeNodes(durable: boolean) {
    const dir = tempDir("hm-move-");
    const registry = new Registry();
    const handled: Array<[string, Envelope]> = [];
    const nodes: MeshNode[] = [];
    for (const address of ["work#0", "work#1"]) {
      const socket = join(dir.path, `${address}.sock`);
      registry.upsert(entry(address, { socket, durable }));
      // work#0 never answers or acknowledges: what it got stays unacknowledged at the sender.
      nodes.push(await MeshNode.start({
        address, socketPath: socket, routes: registry, pick: (c) => c[0],
        onRequest: (served) => {
          handled.push([address, served.request]);
          if (address === "work#1") served.respond({ by: address });
        },
        onEvent: (event) => {
          handled.push([address, event.envelope]);
          if (address === "work#1") event.done();
        },
      }));
    }
    const delivered: Array<[string, string]> = [];
    const outcomes: string[] = [];
    const sender = await MeshNode.start({
      address: "sender", routes: registry, pick: (c) => c.find((e) => e.health === "healthy"),
      onDelivered: (env, destination) => delivered.push([env.message_id, destination]),
      onOutcome: (address) => outcomes.push(address),
    });
    return {
      registry, handled, delivered, outcomes, sender, crashed: nodes[0]!,
      async [Symbol.asyncDispose]() {
        await sender.close();
        for (const node of nodes) await node.close();
        dir[Symbol.dispose]();
      },
    };
  }

  test("not durable: the unacknowledged request and event go to the sibling; the outbox and the outcome see it right", async () => {
    await using t = await threeNodes(false);
    const answer = t.sender.request({ capability: "work" }, { n: 1 }, { timeoutMs: 10_000 });
    const sent = t.sender.emit({ capability: "work" }, { n: 2 });
    expect(sent).toBe(1);
    await waitFor(() => t.handled.length === 2, "both at work#0");
    expect(t.handled.map(([address]) => address)).toEqual(["work#0", "work#0"]);
    await t.crashed.close();
    t.registry.patch("work#0", { health: "down" });
    t.sender.notifyAway("work#0");
    expect((await answer).payload).toEqual({ by: "work#1" });
    await waitFor(() => t.handled.length === 4, "both again at work#1");
    expect(t.handled.slice(2).map(([address, env]) => [address, env.attempt])).toEqual([["work#1", 2], ["work#1", 2]]);
    // Acknowledged by work#1, told by the destination they were first sent to (where an outbox keeps them).
    await waitFor(() => t.delivered.length === 2, "both acknowledged");
    expect(t.delivered.map(([, destination]) => destination)).toEqual(["work#0", "work#0"]);
    expect(t.outcomes).toEqual(["work#1"]);
  });

  test("a crash's envelopes spread over the siblings as the scheduler picks each (least loaded here)", async () => {
    using dir = tempDir("hm-move-spread-");
    const registry = new Registry();
    const handledBy = new Map<string, number>();
    const nodes: MeshNode[] = [];
    for (const address of ["work#0", "work#1", "work#2"]) {
      const socket = join(dir.path, `${address}.sock`);
      registry.upsert(entry(address, { socket }));
      nodes.push(await MeshNode.start({
        address, socketPath: socket, routes: registry, pick: (c) => c[0],
        onRequest: (served) => {
          handledBy.set(address, (handledBy.get(address) ?? 0) + 1);
          // work#0 never answers or acknowledges: all it got stays unacknowledged at the sender.
          if (address !== "work#0") served.respond({ by: address });
        },
      }));
    }
    let sender: MeshNode | undefined;
    // work#0 while it is healthy, else the healthy one this sender has the fewest envelopes out to.
    const leastLoaded = (candidates: readonly RegistryEntry[]) => {
      const healthy = candidates.filter((c) => c.health === "healthy");
      return healthy.find((c) => c.address === "work#0") ?? healthy.sort((a, b) => sender!.inFlightTo(a.address) - sender!.inFlightTo(b.address))[0];
    };
    sender = await MeshNode.start({ address: "sender", routes: registry, pick: leastLoaded });
    try {
      const answers = Array.from({ length: 20 }, (_, n) => sender!.request({ capability: "work" }, { n }, { timeoutMs: 10_000 }));
      await waitFor(() => handledBy.get("work#0") === 20, "all 20 at work#0");
      await nodes[0]!.close();
      registry.patch("work#0", { health: "down" });
      sender.notifyAway("work#0");
      const by = (await Promise.all(answers)).map((answer) => (answer.payload as { by: string }).by);
      expect(by.filter((a) => a === "work#1")).toHaveLength(10);
      expect(by.filter((a) => a === "work#2")).toHaveLength(10);
    } finally {
      await sender.close();
      for (const node of nodes) await node.close();
    }
  });

  test("the registry said down before the connection broke: the break itself moves them", async () => {
    await using t = await threeNodes(false);
    const answer = t.sender.request({ capability: "work" }, { n: 1 }, { timeoutMs: 10_000 });
    await waitFor(() => t.handled.length === 1, "the request at work#0");
    t.registry.patch("work#0", { health: "down" });
    t.sender.notifyAway("work#0"); // the connection is still open: nothing moves yet
    expect(t.handled).toHaveLength(1);
    await t.crashed.close();
    expect((await answer).payload).toEqual({ by: "work#1" });
  });

  const waits: Array<[string, boolean, "starting" | "down"]> = [["starting (a live process)", false, "starting"], ["durable", true, "down"]];
  for (const [what, durable, health] of waits) {
    test(`${what}: they wait for the instance`, async () => {
      await using t = await threeNodes(durable);
      const answer = t.sender.request({ capability: "work" }, { n: 1 }, { timeoutMs: 10_000 }).catch((e) => e);
      await waitFor(() => t.handled.length === 1, "the request at work#0");
      await t.crashed.close();
      t.registry.patch("work#0", { health });
      t.sender.notifyAway("work#0");
      await waitFor(() => t.sender.stats.queued === 1, "the request waiting for work#0");
      expect(t.handled).toHaveLength(1);
      expect(t.sender.stats.pending).toBe(1);
      void answer;
    });
  }
});
