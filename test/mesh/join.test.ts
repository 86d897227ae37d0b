/**
 * joinMesh, the one way into a mesh: a failed join leaves nothing behind (checked in a child
 * process that must exit on its own), and every kind of joiner redials a peer the moment the
 * registry says it is back.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { connectMesh } from "../../src/actor/connect-mesh.ts";
import { clientSocketPath, CONTROL_ACK_DELAY_MS } from "../../mesh/control-protocol.ts";
import type { Connection } from "../../mesh/connection.ts";
import { ControlClient, predialControl } from "../../mesh/control-client.ts";
import { ControlServer } from "../../mesh/control-server.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { joinMesh, type MeshMember } from "../../mesh/join.ts";
import { createLogger } from "../../mesh/logger.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import { Registry, type RegistryEntry, type RegistryUpdate } from "../../mesh/registry.ts";
import { schedulerPicker, Scheduler } from "../../mesh/routing.ts";
import { holdsWithin, spawnBun, tempDir, waitFor } from "../helpers.ts";
import { startTestMesh } from "../actor/mesh-harness.ts";

const FIXTURE = join(import.meta.dir, "join-fixture.ts");
const quiet = createLogger({}, () => {});
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs the fixture; it must exit by itself within the deadline. Returns what it printed. */
async function tryConnect(dir: string, name: string, token?: string): Promise<string[]> {
  await using script = spawnBun(FIXTURE, [dir, name, ...(token ? [token] : [])]);
  // A timeout here means something it opened is still keeping it alive.
  await waitFor(() => script.proc.exitCode !== null, "the script to exit by itself", 15_000);
  expect(script.proc.exitCode).toBe(0);
  return script.lines;
}

/** Socket files clients left in `<dir>/clients`. */
function clientSockets(dir: string): string[] {
  const clients = join(dir, "clients");
  return existsSync(clients) ? readdirSync(clients) : [];
}

describe("a failed join leaves nothing behind", () => {
  test("connectMesh where no mesh runs: code 10, no socket file, and the script exits on its own", async () => {
    using dir = tempDir();
    expect(await tryConnect(dir.path, "script")).toEqual(["rejected 10"]);
    expect(clientSockets(dir.path)).toEqual([]);
  }, 30_000);

  test("a wrong token (code 5) and a refused join after the node listened (code 2) leak nothing; a good join then works", async () => {
    process.env.HM_JOIN_TEST_TOKEN = "the-right-token";
    await using t = await startTestMesh(`
mesh:
  name: join-leaks
  token_env: HM_JOIN_TEST_TOKEN
supervisor:
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
`);
    expect(await tryConnect(t.dir, "script", "a-wrong-token")).toEqual(["rejected 5"]);
    expect(clientSockets(t.dir)).toEqual([]);
    // The supervisor refuses the address only once the node listens on <dir>/clients/<address>.sock.
    expect(await tryConnect(t.dir, "not a name", "the-right-token")).toEqual(["rejected 2"]);
    expect(clientSockets(t.dir)).toEqual([]);
    expect(await tryConnect(t.dir, "script", "the-right-token")).toEqual(["joined"]);
    expect(clientSockets(t.dir)).toEqual([]);
    expect(t.mesh.registry.snapshot().filter((e) => e.kind === "client")).toEqual([]);
  }, 60_000);
});

/** A supervisor's control plane with a registry the test drives by hand. */
async function controlPlane() {
  const dir = tempDir();
  cleanups.push(() => dir[Symbol.dispose]());
  const registry = new Registry();
  const server = await ControlServer.start({ dir: dir.path, meshName: "join-test", registry, heartbeatMs: 1000, onHung: () => {}, log: quiet });
  cleanups.push(() => server.close());
  return { dir: dir.path, registry, server };
}

function actorEntry(dir: string, address: string, health: RegistryEntry["health"]): RegistryEntry {
  return {
    name: address, instance: 0, address, id: `id-${address}`, socket: join(dir, `${address}.sock`), capabilities: [], subscriptions: [],
    health, kind: "actor", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now(),
  };
}

/** The ways into the mesh, each sending one request to `svc`. */
const JOINERS: Record<string, (plane: Awaited<ReturnType<typeof controlPlane>>) => Promise<{ request(): Promise<unknown>; close(): Promise<void> }>> = {
  "connectMesh (a listening client)": async ({ dir }) => {
    const client = await connectMesh({ dir, name: "script" });
    return { request: () => client.request("svc", {}, { timeoutMs: 10_000 }), close: () => client.close() };
  },
  "a dial-only client, as the gateway joins": async ({ dir }) => {
    const member = await joinMesh({ dir, address: "gateway" });
    return { request: () => member.node.request({ target_agent: "svc" }, {}, { timeoutMs: 10_000 }), close: () => member.close() };
  },
  "an actor instance, as the actor host joins": async ({ dir, registry, server }) => {
    registry.upsert(actorEntry(dir, "caller", "starting"));
    server.expectSpawn("caller", "caller-secret");
    const member = await joinMesh({ kind: "actor", dir, address: "caller", spawnSecret: "caller-secret" });
    return { request: () => member.node.request({ target_agent: "svc" }, {}, { timeoutMs: 10_000 }), close: () => member.close() };
  },
};

describe("every joiner redials a peer as soon as the registry says it is back", () => {
  for (const [who, open] of Object.entries(JOINERS)) {
    for (const news of ["upsert", "patch"] as const) {
      test(`${who}, on a healthy ${news}`, async () => {
        const plane = await controlPlane();
        const { dir, registry } = plane;
        const entry = actorEntry(dir, "svc", "down");
        registry.upsert(entry);
        // Until it is back, svc's socket takes each dial and drops it: every dial fails.
        const failedDial = Promise.withResolvers<number>();
        let dials = 0;
        const fake = Bun.listen({
          unix: entry.socket,
          socket: {
            open(socket) {
              socket.end();
              // The 8th failure in a row: the link's next try is 400..600 ms away (backoff at its ceiling).
              if (++dials === 8) failedDial.resolve(performance.now());
            },
            data() {},
          },
        });
        cleanups.push(() => fake.stop(true));
        const joiner = await open(plane);
        cleanups.push(() => joiner.close());
        const answered = joiner.request().then(() => performance.now());
        const failedAt = await failedDial.promise;
        fake.stop(true);
        const svc = await MeshNode.start({
          address: "svc", socketPath: entry.socket, routes: registry, pick: schedulerPicker(new Scheduler()),
          onRequest: (request) => request.respond({ ok: true }),
        });
        cleanups.push(() => svc.close());
        if (news === "upsert") registry.upsert({ ...entry, health: "healthy", updatedAt: Date.now() });
        else registry.patch("svc", { health: "healthy", updatedAt: Date.now() });
        // Waiting out the backoff would take 400 ms at least.
        expect((await answered) - failedAt).toBeLessThan(300);
      }, 20_000);
    }
  }

  test("a peer removed from the registry: what waited for it is dead-lettered at once", async () => {
    const plane = await controlPlane();
    const member = await joinMesh({ dir: plane.dir, address: "gateway" });
    cleanups.push(() => member.close());
    // A dial-only client has no socket: an event for it waits in the link until it leaves.
    const leaver = await joinMesh({ dir: plane.dir, address: "leaver" });
    await waitFor(() => member.registry.byAddress("leaver") !== undefined, "the leaver in the gateway's registry");
    member.node.emit({ target_agent: "leaver" }, { note: "for you" });
    expect(member.node.stats.queued).toBe(1);
    await leaver.close();
    await waitFor(() => member.node.deadLetters().length === 1, "the event dead-lettered");
    expect(member.node.deadLetters()[0]!.error.detail).toContain("leaver left the mesh");
    expect(member.node.stats.queued).toBe(0);
  });
});

describe("registry updates held back (ControlServer.holdUpdates, as while a tree starts)", () => {
  /** A dial-only member and the updates it applies, each with when it arrived. */
  async function watcher(dir: string, address: string) {
    const member = await joinMesh({ dir, address });
    cleanups.push(() => member.close());
    const seen: Array<{ update: RegistryUpdate; at: number }> = [];
    member.registry.onUpdate((update) => seen.push({ update, at: performance.now() }));
    return { member, seen };
  }
  const about = (address: string) => (u: { update: RegistryUpdate }) =>
    (u.update.type === "patch" || u.update.type === "remove" ? u.update.address : u.update.type === "upsert" ? u.update.entry.address : "") === address;

  test("nothing goes out before the hold's longest wait; then everything held, in order, and again after the next change", async () => {
    const plane = await controlPlane();
    const { seen } = await watcher(plane.dir, "watcher");
    const release = plane.server.holdUpdates(300);
    cleanups.push(release);
    const heldAt = performance.now();
    plane.registry.upsert(actorEntry(plane.dir, "a", "starting"));
    plane.registry.patch("a", { queueDepth: 3 });
    await waitFor(() => seen.some(about("a")), "the held updates after 300 ms");
    const first = seen.filter(about("a"));
    expect(first[0]!.at - heldAt).toBeGreaterThanOrEqual(290);
    expect(first.map((u) => u.update.type)).toEqual(["upsert", "patch"]);
    // A later change is held again, for as long.
    const againAt = performance.now();
    plane.registry.patch("a", { queueDepth: 4 });
    await waitFor(() => seen.filter(about("a")).length === 3, "the second change");
    expect(seen.at(-1)!.at - againAt).toBeGreaterThanOrEqual(290);
  }, 20_000);

  test("under a steady stream of changes the first still goes out within the longest wait", async () => {
    const plane = await controlPlane();
    const { seen } = await watcher(plane.dir, "watcher");
    const release = plane.server.holdUpdates(300);
    cleanups.push(release);
    plane.registry.upsert(actorEntry(plane.dir, "a", "starting"));
    const startedAt = performance.now();
    // A change every 50 ms for 1.5 s: a hold that waited for a pause would send nothing meanwhile.
    let depth = 0;
    const stream = setInterval(() => plane.registry.patch("a", { queueDepth: ++depth }), 50);
    cleanups.push(() => clearInterval(stream));
    await waitFor(() => seen.some(about("a")), "the first held updates");
    expect(seen.find(about("a"))!.at - startedAt).toBeLessThan(1000);
    clearInterval(stream);
  }, 20_000);

  /** A control plane where "a" changes (queueDepth 7) right behind the answer to the join of "late". */
  async function planeChangingBehindJoin() {
    const plane = await controlPlane();
    plane.registry.upsert(actorEntry(plane.dir, "a", "starting"));
    // As the joiner's own entry goes in (its join being answered), "a" changes: the news follows the answer in the same turn's write.
    cleanups.push(plane.registry.onUpdate((u) => {
      if (u.type === "upsert" && u.entry.address === "late") queueMicrotask(() => plane.registry.patch("a", { queueDepth: 7 }));
    }));
    return plane;
  }

  test("a change sent right behind a join's answer, in the same write, is not undone by the answer's older snapshot", async () => {
    const plane = await planeChangingBehindJoin();
    const late = await watcher(plane.dir, "late");
    await waitFor(() => late.member.registry.byAddress("a")?.queueDepth === 7, "the change made as the join was answered", 3000);
  }, 20_000);

  test("with a second register or join out that fails meanwhile, the first's answer still keeps what came behind it", async () => {
    const plane = await planeChangingBehindJoin();
    const registry = new Registry();
    const control = await ControlClient.connect({ dir: plane.dir, address: "late", registry });
    cleanups.push(() => control.close());
    const joined = control.join(undefined, []);
    // Refused here before it is sent (a BigInt past 64 bits cannot be encoded): it settles before the join's answer.
    await expect(control.register(undefined, { capabilities: [], subscriptions: [], capability_info: { x: { description: String(1n << 70n) } }, extra: 1n << 70n } as never)).rejects.toThrow();
    await joined;
    await waitFor(() => registry.byAddress("a")?.queueDepth === 7, "the change made as the join was answered", 3000);
  }, 20_000);

  test("the end of the hold sends what waits at once; a member that joined meanwhile gets only what came after its join", async () => {
    const plane = await controlPlane();
    const early = await watcher(plane.dir, "early");
    const release = plane.server.holdUpdates(60_000);
    cleanups.push(release);
    plane.registry.upsert(actorEntry(plane.dir, "a", "starting"));
    plane.registry.patch("a", { queueDepth: 3 });
    const late = await watcher(plane.dir, "late");
    expect(late.member.registry.byAddress("a")?.queueDepth).toBe(3);
    plane.registry.patch("a", { queueDepth: 4 });
    expect(early.seen.filter(about("a"))).toEqual([]);
    const releasedAt = performance.now();
    release();
    await waitFor(() => early.seen.filter(about("a")).length === 3 && late.seen.some(about("a")), "the held updates at both");
    expect(performance.now() - releasedAt).toBeLessThan(5000);
    expect(early.seen.filter(about("a")).map((u) => u.update.type)).toEqual(["upsert", "patch", "patch"]);
    // The late member's snapshot had the upsert and the first patch: it is told only of the second.
    expect(late.seen.filter(about("a")).map((u) => u.update)).toEqual([{ type: "patch", address: "a", changes: { queueDepth: 4 } }]);
    expect(late.member.registry.byAddress("a")?.queueDepth).toBe(4);
    expect(early.member.registry.byAddress("a")?.queueDepth).toBe(4);
    // Held no more: the next change goes out at once.
    plane.registry.patch("a", { queueDepth: 5 });
    await waitFor(() => early.member.registry.byAddress("a")?.queueDepth === 5, "an unheld change (a held one would wait 60 s)");
  }, 20_000);
});

describe("joinMesh", () => {
  test("an actor registers, listens where its entry says, runs init, then is healthy and heartbeats; close is idempotent", async () => {
    const plane = await controlPlane();
    const entry = actorEntry(plane.dir, "worker", "starting");
    plane.registry.upsert(entry);
    plane.server.expectSpawn("worker", "worker-secret");
    const seen: string[] = [];
    let beats = 0;
    const member: MeshMember = await joinMesh({
      kind: "actor", dir: plane.dir, address: "worker", spawnSecret: "worker-secret", capabilities: ["work"],
      init: () => {
        seen.push(`init: listening ${existsSync(entry.socket)}, ${plane.registry.byAddress("worker")!.health}`);
      },
      heartbeat: () => ({ queue_depth: 3, in_flight: ++beats, handled: 0, dead_letters: 0 }),
    });
    expect(seen).toEqual(["init: listening true, starting"]);
    expect(member.socketPath).toBe(entry.socket);
    expect(plane.registry.byAddress("worker")).toMatchObject({ health: "healthy", capabilities: ["work"] });
    await waitFor(() => plane.registry.byAddress("worker")!.queueDepth === 3, "a heartbeat's figures");
    await member.close();
    await member.close();
    await member.closed;
    expect(existsSync(entry.socket)).toBe(false);
  });

  test("its control connection holds acks both ways: a heartbeat's rides on the supervisor's next update", async () => {
    const plane = await controlPlane();
    plane.registry.upsert(actorEntry(plane.dir, "worker", "starting"));
    plane.server.expectSpawn("worker", "worker-secret");
    const member = await joinMesh({
      kind: "actor", dir: plane.dir, address: "worker", spawnSecret: "worker-secret",
      // Figures that never change: a change would go out to every member, this one too, and the ack with it.
      heartbeat: () => ({ queue_depth: 0, in_flight: 0, handled: 0, dead_letters: 0 }),
    });
    cleanups.push(() => member.close());
    const connection = member.control.channel.connection as Connection;
    expect(connection.peer?.ack_delay_ms).toBe(CONTROL_ACK_DELAY_MS);
    await waitFor(() => connection.inFlight >= 1, "a heartbeat sent");
    // Not acknowledged on its own: without the hold that would be within a turn of its arrival.
    expect(await holdsWithin(() => connection.inFlight === 0, 300)).toBe(false);
    plane.registry.upsert(actorEntry(plane.dir, "other", "healthy"));
    await waitFor(() => member.registry.byAddress("other") !== undefined && connection.inFlight === 0, "the update, and with it the ack");
  });

  test("an actor whose init throws: the join fails with that error, its socket is gone, it never became healthy", async () => {
    const plane = await controlPlane();
    const entry = actorEntry(plane.dir, "worker", "starting");
    plane.registry.upsert(entry);
    plane.server.expectSpawn("worker", "worker-secret");
    const failure = await joinMesh({
      kind: "actor", dir: plane.dir, address: "worker", spawnSecret: "worker-secret",
      init: () => {
        throw new HermesError(ErrorCode.INTERNAL, "init failed");
      },
    }).catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: ErrorCode.INTERNAL, message: "init failed" });
    expect(existsSync(entry.socket)).toBe(false);
    expect(plane.registry.byAddress("worker")!.health).toBe("starting");
    // A wrong secret is code 5, refused before anything listens.
    plane.server.expectSpawn("worker", "the-next-secret");
    const refused = await joinMesh({ kind: "actor", dir: plane.dir, address: "worker", spawnSecret: "not-it" }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: ErrorCode.AUTH_FAILED });
    expect(existsSync(entry.socket)).toBe(false);
  });

  test("a client refused after it listened (its address names an actor): code 2, its socket file removed", async () => {
    const plane = await controlPlane();
    plane.registry.upsert(actorEntry(plane.dir, "svc", "healthy"));
    const refused = await joinMesh({ dir: plane.dir, address: "svc", listen: true }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: ErrorCode.INVALID_REQUEST });
    expect(existsSync(clientSocketPath(plane.dir, "svc"))).toBe(false);
    expect(clientSockets(plane.dir)).toEqual([]);
  });

  test("a client given dead-letter limits out of range is refused with code 2 before anything opens", async () => {
    const plane = await controlPlane();
    for (const deadLetters of [{ max: 0 }, { maxBytes: -5 }, { max: 2.5 }]) {
      const refused = await connectMesh({ dir: plane.dir, name: "limits", deadLetters }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: ErrorCode.INVALID_REQUEST, fields: { reason: expect.stringContaining("deadLetters.") } });
    }
    expect(clientSockets(plane.dir)).toEqual([]);
    expect(plane.registry.snapshot()).toEqual([]);
    const client = await connectMesh({ dir: plane.dir, name: "limits", deadLetters: { max: 5, maxBytes: 0 } });
    await client.close();
  });

  test("a client that subscribes without listening is refused before anything opens", async () => {
    const plane = await controlPlane();
    const refused = await joinMesh({ dir: plane.dir, address: "deaf", subscriptions: ["news.#"] }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: ErrorCode.INVALID_REQUEST });
    expect(plane.registry.byAddress("deaf")).toBeUndefined();
  });
});

describe("joiners and a real actor process killed mid-request", () => {
  test("a client and a gateway-like joiner both get their answers from the restarted actor", async () => {
    await using t = await startTestMesh(`
mesh:
  name: join-restart
supervisor:
  intensity: 10
  period_ms: 10000
  backoff: { initial_ms: 1, max_ms: 5 }
  children:
    - actor: crasher
      module: {FIXTURES}/crasher.ts
`);
    using markers = tempDir();
    const client = await t.client();
    const gateway = await joinMesh({ dir: t.dir, address: "gateway" });
    cleanups.push(() => gateway.close());
    const first = t.pid("crasher");
    const [a, b] = await Promise.all([
      client.request("crasher", { op: "die-once", marker: join(markers.path, "client") }, { timeoutMs: 20_000 }),
      gateway.node.request({ target_agent: "crasher" }, { op: "die-once", marker: join(markers.path, "gateway") }, { timeoutMs: 20_000 }),
    ]);
    expect(a.payload.attempt).toBeGreaterThanOrEqual(2);
    expect(b.payload.attempt).toBeGreaterThanOrEqual(2);
    expect(t.pid("crasher")).not.toBe(first);
  }, 40_000);
});

/** The name a member's control connection gave in its hello. */
const helloName = (member: MeshMember) => (member.control.channel.connection as Connection).options.node;

describe("a control connection dialled ahead (predialControl, as a standby host does)", () => {
  test("an actor registers over the connection opened before it knew who it would be", async () => {
    const plane = await controlPlane();
    await predialControl(plane.dir);
    plane.registry.upsert(actorEntry(plane.dir, "late", "starting"));
    plane.server.expectSpawn("late", "late-secret");
    const member = await joinMesh({ kind: "actor", dir: plane.dir, address: "late", spawnSecret: "late-secret", onRequest: (s) => s.respond({ ok: true }) });
    cleanups.push(() => member.close());
    expect(helloName(member)).toBe(`standby-${process.pid}`);
    expect(plane.registry.byAddress("late")?.health).toBe("healthy");
    // The secret still decides: the connection was only a token holder's until it registered.
    const client = await joinMesh({ dir: plane.dir, address: "asker" });
    cleanups.push(() => client.close());
    expect((await client.node.request({ target_agent: "late" }, {}, { timeoutMs: 10_000 })).payload).toEqual({ ok: true });
  }, 30_000);

  test("over a connection dialled ahead, a wrong spawn secret is still refused with code 5", async () => {
    const plane = await controlPlane();
    await predialControl(plane.dir);
    plane.registry.upsert(actorEntry(plane.dir, "guarded", "starting"));
    plane.server.expectSpawn("guarded", "the-real-secret");
    await expect(joinMesh({ kind: "actor", dir: plane.dir, address: "guarded", spawnSecret: "a-guess" })).rejects.toMatchObject({ code: ErrorCode.AUTH_FAILED });
    expect(plane.registry.byAddress("guarded")?.health).toBe("starting");
  }, 30_000);

  test("it is taken only for its own mesh and only while open; otherwise the member dials as usual", async () => {
    const first = await controlPlane();
    const second = await controlPlane();
    await predialControl(first.dir);
    const other = await joinMesh({ dir: second.dir, address: "elsewhere" });
    cleanups.push(() => other.close());
    expect(helloName(other)).toBe("elsewhere");
    // A token that differs from the one it was opened with: not taken either.
    await predialControl(first.dir, "some-token");
    const plain = await joinMesh({ dir: first.dir, address: "tokenless" });
    cleanups.push(() => plain.close());
    expect(helloName(plain)).toBe("tokenless");
    // Closed by the supervisor meanwhile (it stopped, and another took its place): the next join dials afresh.
    const early = await predialControl(second.dir);
    await second.server.close();
    await early!.closed;
    const again = await ControlServer.start({ dir: second.dir, meshName: "join-test", registry: second.registry, heartbeatMs: 1000, onHung: () => {}, log: quiet });
    cleanups.push(() => again.close());
    const fresh = await joinMesh({ dir: second.dir, address: "fresh" });
    cleanups.push(() => fresh.close());
    expect(helloName(fresh)).toBe("fresh");
  }, 30_000);

  test("a mesh that is not there leaves nothing to take", async () => {
    using dir = tempDir();
    expect(await predialControl(dir.path)).toBeUndefined();
    await expect(joinMesh({ dir: dir.path, address: "nobody" })).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE });
  }, 30_000);
});
