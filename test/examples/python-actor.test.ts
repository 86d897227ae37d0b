/**
 * The Python reference actor (examples/python/hermes_actor.py, issue 16 item 4): a program in
 * another language, written from docs/protocol.md, joins a real mesh as an external member and
 * serves requests with acks. Called by capability through the gateway over HTTP and by name
 * from a connectMesh client; killed with SIGKILL, the requests sent while it was down are
 * answered by its next start; SIGTERM makes it exit 0 and remove its socket.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { startTestMesh } from "../actor/mesh-harness.ts";
import { createTestGroup, spawnWithOutput, waitFor, type OutputProcess } from "../helpers.ts";
import { connectMesh, createRequest, dial, ErrorCode, HermesError, RequestChannel, type Envelope } from "../../src/internal.ts";

const PYTHON = "/usr/bin/python3";
const ACTOR = join(import.meta.dir, "../../examples/python/hermes_actor.py");
const TOKEN = "python-actor-secret";
const NAME = "pyup";

const MESH = `
mesh: { name: pyactor, token_env: HM_PYTHON_ACTOR_TOKEN, heartbeat_ms: 200 }
supervisor:
  children:
    - { actor: echo, module: "{ACTORS}/echo.ts" }
`;

/** CI installs python3-msgpack; without it this test cannot say anything, so it says what to install. */
function requireMsgpack(): void {
  const probe = Bun.spawnSync([PYTHON, "-c", "import msgpack"], { stdout: "ignore", stderr: "pipe" });
  if (probe.exitCode !== 0) {
    throw new Error(`${PYTHON} cannot import msgpack (${probe.stderr.toString().trim()}): sudo apt-get install -y python3-msgpack`);
  }
}

/**
 * The Python actor as a process of its own; SIGKILLed on dispose if still running. `token`
 * undefined: no $HERMES_MESH_TOKEN, so the actor takes the variable <dir>/mesh.json names.
 */
function pythonActor(dir: string, name = NAME, token: string | undefined = TOKEN): OutputProcess {
  const env: Record<string, string | undefined> = { ...process.env, HERMES_MESH_TOKEN: token };
  if (token === undefined) delete env.HERMES_MESH_TOKEN;
  return spawnWithOutput([PYTHON, ACTOR, "--dir", dir, "--name", name], env);
}

describe("the Python reference actor", () => {
  test("joins as an external member, is called by capability over HTTP and by name, survives kill -9, exits 0 on SIGTERM", async () => {
    requireMsgpack();
    process.env.HM_PYTHON_ACTOR_TOKEN = TOKEN;
    await using t = await startTestMesh(MESH, { gateway: { port: 0 } });
    const socketPath = join(t.dir, `${NAME}.sock`);
    const client = await connectMesh({ dir: t.dir, name: "pytest", token: TOKEN });
    try {
      const healthy = (pid: number) => {
        const entry = t.mesh.registry.byAddress(NAME);
        return entry?.health === "healthy" && entry.external === true && entry.pid === pid;
      };
      await using first = pythonActor(t.dir);
      await waitFor(async () => {
        if (first.proc.exitCode !== null) throw new Error(`the Python actor exited ${first.proc.exitCode}: ${await first.output}`);
        return healthy(first.proc.pid);
      }, "the Python actor healthy and external", 20_000);
      expect(t.mesh.registry.byAddress(NAME)).toMatchObject({ kind: "actor", external: true, capabilities: ["py.upper"], socket: socketPath });
      expect(statSync(socketPath).mode & 0o777).toBe(0o600);

      // By capability, through the gateway over real HTTP: the receiver names no actor, the payload names the tool.
      await waitFor(() => Boolean(t.mesh.gateway?.url), "the gateway's URL", 20_000);
      const http = await fetch(`${t.mesh.gateway!.url}/hermes/v1/invoke`, {
        method: "POST",
        headers: { "content-type": "application/hermes+json" },
        body: JSON.stringify({
          meta: { version: "1.2", msg_type: 1, sender_id: "http-test", receiver_id: "whoever-upper", ttl: 10, trace_id: "py-trace-1" },
          payload: { tool: "py.upper", text: "grüße, wörld" },
        }),
      });
      expect(http.status).toBe(200);
      expect(await http.json()).toMatchObject({ meta: { msg_type: 2, trace_id: "py-trace-1", sender_id: "whoever-upper" }, payload: { text: "GRÜSSE, WÖRLD" } });

      // By name, 200 requests: 50 one after the other, then 150 at once.
      const text = (i: number) => `message ${i} ä`;
      for (let i = 0; i < 50; i++) expect((await client.request(NAME, { text: text(i) }, { timeoutMs: 10_000 })).payload).toEqual({ text: text(i).toUpperCase() });
      const together = await Promise.all(Array.from({ length: 150 }, (_, k) => client.request(NAME, { text: text(50 + k) }, { timeoutMs: 10_000 })));
      expect(together.map((a) => a.payload.text)).toEqual(Array.from({ length: 150 }, (_, k) => text(50 + k).toUpperCase()));
      // An unknown op is code 2, from the actor itself.
      const refused = await client.request(NAME, { op: "reverse", text: "x" }, { timeoutMs: 10_000 }).catch((e) => e);
      expect(refused).toBeInstanceOf(HermesError);
      expect(refused).toMatchObject({ code: ErrorCode.INVALID_REQUEST, fields: { reason: "unknown op" } });

      // Heartbeats at the interval the register answer gave (200 ms): the supervisor's ps sees new ones arrive.
      {
        const control = new RequestChannel(await dial({ path: join(t.dir, "supervisor.sock") }, { node: "ps-test", token: TOKEN }), "ps-test");
        try {
          const lastBeat = async () => {
            const { entries } = (await control.request({ target_agent: "supervisor" }, { op: "ps" }, { timeoutMs: 5000 })).payload as { entries: Array<{ address: string; heartbeat_age_ms: number | null }> };
            const age = entries.find((e) => e.address === NAME)?.heartbeat_age_ms;
            return age == null ? 0 : Date.now() - age;
          };
          const before = await lastBeat();
          let beats = 0;
          let seen = before;
          await waitFor(async () => {
            const at = await lastBeat();
            if (at > seen + 50) [beats, seen] = [beats + 1, at];
            return beats >= 3;
          }, "three heartbeats from the Python actor", 5000);
          expect(t.mesh.registry.byAddress(NAME)!.health).toBe("healthy");
        } finally {
          await control.connection.close();
        }
      }

      // On one raw connection: a redelivered request is answered from memory, not handled twice
      // (the same answer message_id); an expired one is code 9; pings get pongs; everything is acked.
      {
        const answers: Envelope[] = [];
        const raw = await dial({ path: socketPath }, { node: "raw-test", token: TOKEN, codecs: ["msgpack"], pingIntervalMs: 50 });
        raw.onEnvelope = (env, seq) => {
          answers.push(env);
          raw.settle(seq);
        };
        try {
          // Its socket wants the mesh token from peers too.
          expect(await dial({ path: socketPath }, { node: "intruder", token: "not-it" }).catch((e) => e)).toMatchObject({ code: ErrorCode.AUTH_FAILED });
          const request = createRequest("raw-test", { target_agent: NAME }, { text: "twice" });
          raw.send({ ...request });
          raw.send({ ...request, attempt: 2 });
          const expired = createRequest("raw-test", { target_agent: NAME }, { text: "late" }, { ttl: 0 });
          raw.send(expired);
          await waitFor(() => answers.length >= 3, "three answers on the raw connection", 10_000);
          const [once, again, late] = answers;
          expect(once).toMatchObject({ message_type: "response", correlation_id: request.message_id, target_agent: "raw-test", trace_id: request.trace_id, payload: { text: "TWICE" } });
          expect(again!.message_id).toBe(once!.message_id);
          expect(late).toMatchObject({ message_type: "error", correlation_id: expired.message_id, payload: { error_code: ErrorCode.TTL_EXPIRED } });
          expect(await raw.whenAcknowledged(5000)).toBe(true);
          await waitFor(() => raw.stats.pongsReceived > 0, "a pong", 5000);
        } finally {
          await raw.close();
        }
      }

      // kill -9: the mesh sees it down and keeps its stale socket file; requests sent meanwhile wait in the sender.
      first.proc.kill("SIGKILL");
      await first.proc.exited;
      await waitFor(() => t.mesh.registry.byAddress(NAME)?.health === "down", "the Python actor seen down", 10_000);
      expect(existsSync(socketPath)).toBe(true);
      const waiting = Array.from({ length: 20 }, (_, i) => client.request(NAME, { text: `while down ${i}` }, { timeoutMs: 30_000 }));
      // This start finds the token the way the CLI does: mesh.json names HM_PYTHON_ACTOR_TOKEN.
      await using second = pythonActor(t.dir, NAME, undefined);
      const late = await Promise.all(waiting);
      expect(late.map((a) => a.payload.text)).toEqual(Array.from({ length: 20 }, (_, i) => `WHILE DOWN ${i}`));
      await waitFor(() => healthy(second.proc.pid), "the second start healthy", 10_000);
      expect(t.mesh.registry.byAddress(NAME)!.restarts).toBe(1);
      expect(t.mesh.registry.byAddress("echo")!.restarts).toBe(0);

      // Refusals end a start with the supervisor's reason: a name the tree owns, a wrong token.
      await using owned = pythonActor(t.dir, "echo");
      expect(await owned.proc.exited).toBe(1);
      expect(await owned.output).toContain("register refused: error 2 INVALID_REQUEST");
      expect(await owned.output).toContain("the supervisor tree owns that name");
      await using intruder = pythonActor(t.dir, "intruder", "not-it");
      expect(await intruder.proc.exited).toBe(1);
      expect(await intruder.output).toContain("error 5 AUTH_FAILED");
      expect(t.mesh.registry.byAddress("intruder")).toBeUndefined();

      // SIGTERM: a clean exit, socket removed, and the mesh sees it down.
      second.proc.kill("SIGTERM");
      expect(await second.proc.exited).toBe(0);
      expect(existsSync(socketPath)).toBe(false);
      await waitFor(() => t.mesh.registry.byAddress(NAME)?.health === "down", "the Python actor down after SIGTERM", 10_000);
    } finally {
      await client.close();
      delete process.env.HM_PYTHON_ACTOR_TOKEN;
    }
  }, 90_000);
  test.skipIf(process.getuid?.() !== 0 || !existsSync("/usr/bin/setpriv"))("as another user in a shared mesh (socket_group), it listens in clients/ with the group and is answered", async () => {
    requireMsgpack();
    const suffix = `${process.pid.toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`.slice(0, 8);
    const group = createTestGroup(`hmpy${suffix}`);
    try {
      const user = group.addUser(`hmpyu${suffix}`, true);
      process.env.HM_PYTHON_ACTOR_TOKEN = TOKEN;
      await using t = await startTestMesh(MESH.replace("heartbeat_ms: 200", `heartbeat_ms: 200, socket_group: ${group.name}`));
      chmodSync(dirname(t.dir), 0o711); // the test's temp dir: the other user may pass through to the mesh directory
      await using actor = spawnWithOutput(["/usr/bin/setpriv", `--reuid=${user.uid}`, "--regid=nogroup", "--init-groups", PYTHON, ACTOR, "--dir", t.dir, "--name", "shared-py"], { ...process.env, HERMES_MESH_TOKEN: TOKEN });
      await waitFor(() => t.mesh.registry.byAddress("shared-py")?.health === "healthy", "the Python actor of another user healthy", 20_000);
      const socket = join(t.dir, "clients", "shared-py.sock");
      expect(t.mesh.registry.byAddress("shared-py")!.socket).toBe(socket);
      expect({ uid: statSync(socket).uid, gid: statSync(socket).gid, mode: (statSync(socket).mode & 0o777).toString(8) }).toEqual({ uid: user.uid, gid: group.gid, mode: "660" });
      const client = await connectMesh({ dir: t.dir, name: "test", token: TOKEN });
      try {
        expect((await client.request("shared-py", { text: "shared" }, { timeoutMs: 10_000 })).payload).toEqual({ text: "SHARED" });
      } finally {
        await client.close();
      }
      actor.proc.kill("SIGTERM");
      expect(await actor.proc.exited).toBe(0);
    } finally {
      group.remove();
    }
  }, 60_000);
});
