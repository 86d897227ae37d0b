/**
 * The control plane believes only what a member proves: attacks on a real mesh (real actor
 * processes, the real supervisor socket) by a party that can connect to supervisor.sock.
 */
import type { Connection } from "../../mesh/connection.ts";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { controlSocketPath } from "../../mesh/control-protocol.ts";
import { RequestChannel } from "../../mesh/requests.ts";
import { dial } from "../../mesh/socket-transport.ts";
import type { Payload } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { waitFor } from "../helpers.ts";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";
import { HELLO, rawConnect } from "./raw-client.ts";

/** A raw control connection, as an attacker (or another implementation) would open one. */
async function controlChannel(t: TestMesh, node: string): Promise<RequestChannel<Connection> & AsyncDisposable> {
  const connection = await dial({ path: controlSocketPath(t.dir) }, { node });
  const channel = new RequestChannel(connection, node) as RequestChannel<Connection> & AsyncDisposable;
  channel[Symbol.asyncDispose] = () => connection.close();
  return channel;
}

async function refusal(channel: RequestChannel, payload: Payload): Promise<HermesError> {
  try {
    await channel.request({ target_agent: "supervisor" }, payload, { timeoutMs: 5000 });
  } catch (error) {
    if (error instanceof HermesError) return error;
    throw error;
  }
  throw new Error(`${String(payload.op)} was accepted`);
}

describe("control plane: members prove who they are", () => {
  let t: TestMesh;
  beforeAll(async () => {
    t = await startTestMesh(`
mesh:
  name: control-auth
  heartbeat_ms: 100
  hung_after_ms: 300
supervisor:
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
      pool: 2
    - actor: solo
      module: {ACTORS}/echo.ts
      subscribe: ["news.#"]
`);
  });
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  test("register without the spawn secret is refused (code 5); the watchdog signals only the pid the supervisor spawned", async () => {
    const bystander = Bun.spawn(["sleep", "1000"], { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    try {
      const spawnedPid = t.pid("solo");
      await using attacker = await controlChannel(t, "intruder");
      for (const secret of [undefined, "", "0".repeat(64)]) {
        const error = await refusal(attacker, { op: "register", address: "solo", pid: bystander.pid, capabilities: ["stolen"], ...(secret !== undefined && { secret }) });
        expect(error.code).toBe(ErrorCode.AUTH_FAILED);
        expect(error.fields.auth_method).toBe("spawn_secret");
      }
      // ready and heartbeat only count on the connection that registered.
      expect((await refusal(attacker, { op: "ready", address: "solo" })).code).toBe(ErrorCode.AUTH_FAILED);
      const entry = t.mesh.registry.byAddress("solo")!;
      expect(entry.pid).toBe(spawnedPid);
      expect(entry.capabilities).not.toContain("stolen");

      // Hang the real actor: the watchdog kills the process it spawned, and only that one.
      const restartsBefore = entry.restarts;
      process.kill(spawnedPid, "SIGSTOP");
      await waitFor(() => (t.mesh.registry.byAddress("solo")?.restarts ?? 0) > restartsBefore && t.mesh.registry.byAddress("solo")?.health === "healthy", "solo restarted after missing heartbeats", 10_000);
      expect(t.mesh.registry.byAddress("solo")!.pid).not.toBe(spawnedPid);
      expect(bystander.exitCode).toBeNull();
      expect(bystander.signalCode).toBeNull();
      const client = await t.client();
      expect((await client.request("solo", { ok: 1 }, { timeoutMs: 5000 })).payload).toEqual({ ok: 1 });
    } finally {
      bystander.kill("SIGKILL");
    }
  });

  test("a client can take no actor's name, pool name, instance address or stable id; nor announce another's socket", async () => {
    await using attacker = await controlChannel(t, "intruder");
    const echo0 = t.mesh.registry.byAddress("echo#0")!;
    for (const address of ["echo", "echo#1", "solo", echo0.id, "supervisor", "../escape", "a#b"]) {
      const error = await refusal(attacker, { op: "join", address, socket: echo0.socket });
      expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    }
    const error = await refusal(attacker, { op: "join", address: "client-free", socket: echo0.socket });
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(String(error.fields.expected)).toEndWith("/clients/client-free.sock");
    expect(t.mesh.registry.byAddress("client-free")).toBeUndefined();

    // Routing by the pool's name still reaches only the pool's own instances.
    const client = await t.client();
    const answers = await Promise.all(Array.from({ length: 40 }, () => client.request("echo", { n: 1 }, { timeoutMs: 5000 })));
    expect(new Set(answers.map((a) => a.source_agent))).toEqual(new Set(["echo#0", "echo#1"]));
  });

  test("subscribe acts on the caller's own address, and its subscriptions leave with its connection", async () => {
    await using attacker = await controlChannel(t, "intruder");
    // Before joining, nothing is the caller's own.
    expect((await refusal(attacker, { op: "subscribe", address: "solo", subscriptions: [] })).code).toBe(ErrorCode.AUTH_FAILED);
    await attacker.request({ target_agent: "supervisor" }, { op: "join", address: "nosy-client", subscriptions: [] }, { timeoutMs: 5000 });
    await attacker.request({ target_agent: "supervisor" }, { op: "subscribe", address: "solo", subscriptions: ["spy.#"] }, { timeoutMs: 5000 });
    expect(t.mesh.registry.byAddress("solo")!.subscriptions).toEqual(["news.#"]);
    expect(t.mesh.registry.byAddress("nosy-client")!.subscriptions).toEqual(["spy.#"]);
    await attacker.connection.close();
    await waitFor(() => t.mesh.registry.byAddress("nosy-client") === undefined, "the client's entry removed with its connection");
    expect(t.mesh.registry.byAddress("solo")!.subscriptions).toEqual(["news.#"]);
  });
  test("a member speaking another protocol version is told so, and the supervisor's log says it too", async () => {
    const raw = await rawConnect(controlSocketPath(t.dir));
    raw.sendFrame({ ...HELLO, protocol: 99 });
    await waitFor(() => raw.frames.length > 0, "the supervisor's answer to the hello");
    expect(raw.frames[0]).toMatchObject({ message_type: "error", payload: { error_code: ErrorCode.INVALID_REQUEST } });
    expect(JSON.stringify(raw.frames[0])).toContain("unsupported protocol version 99");
    await waitFor(() => t.log.some((line) => line.includes("a member's hello was refused") && line.includes("unsupported protocol version 99")), "the refusal in the supervisor's log");
    raw.end();
  });
});
