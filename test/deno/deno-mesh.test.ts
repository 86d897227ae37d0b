/**
 * A whole mesh on Deno (issue 14): `deno run src/cli/main.ts up` with the permissions of the
 * package's `start:deno` script, its actors on Deno by default, the gateway on Deno.serve
 * (HTTP, the Unix socket, the WebSocket), `ps`, `send` and `trace` run by Deno, a Bun client,
 * a SIGKILLed Deno actor restarted, a Bun actor under the Deno supervisor, and SIGTERM
 * stopping it all.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { connectMesh } from "../../src/actor/connect-mesh.ts";
import { findBun } from "../../src/supervisor/bun-runtime.ts";
import { type Child, chunkedBody, denoBinary, isAlive, spawnDeno, tempDir, waitFor } from "../helpers.ts";

const ROOT = join(import.meta.dir, "../..");
const CLI = join(ROOT, "src/cli/main.ts");
const ECHO = join(ROOT, "actors/echo.ts");
const RUNTIME_INFO = join(ROOT, "test/fixtures/actors/runtime-info.ts");

/** The permission flags of `npm run start:deno`, with its write permission moved to `dir`. */
function upPermissions(dir: string): string[] {
  const script = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts["start:deno"]!;
  expect(script).toStartWith("deno run --no-prompt ");
  expect(script).toContain(" src/cli/main.ts up ");
  const flags = script.split(" ").filter((word) => word.startsWith("--allow-"));
  expect(flags.filter((flag) => flag.startsWith("--allow-write="))).toHaveLength(1);
  return flags.map((flag) => (flag.startsWith("--allow-write=") ? `--allow-write=${dir}` : flag));
}

/** What `ps`, `send` and `trace` need: read, the environment, the sockets of the mesh dir. */
const clientPermissions = (dir: string) => ["--allow-read", "--allow-env", "--allow-net", `--allow-write=${dir}`];

/**
 * The PATH of an npm script: the directory of the Deno binary first, so that
 * `--allow-run=deno` names the binary the supervisor spawns actors with.
 */
function pathWith(deno: string): string {
  return [dirname(deno), process.env.PATH ?? ""].join(delimiter);
}

/** A CLI command run by Deno, to its end. */
function denoCli(dir: string, ...args: string[]) {
  const run = Bun.spawnSync([denoBinary(), "run", "--no-prompt", "--quiet", ...clientPermissions(dir), CLI, ...args], { stdout: "pipe", stderr: "pipe", timeout: 30_000 });
  return { code: run.exitCode, out: run.stdout.toString(), err: run.stderr.toString() };
}

const alive = isAlive;

/** Pids of the processes started for the mesh in `dir` (its actors and gateway name it in their argv). */
function meshProcesses(dir: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").includes(dir)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");

interface DenoMesh extends AsyncDisposable {
  up: Child;
  dir: string;
}

/**
 * `deno run <start:deno permissions> src/cli/main.ts up <yaml> --dir <dir> --quiet ...args`,
 * once it printed its "up in" line. Disposing stops it with SIGTERM (SIGKILL past a deadline)
 * and kills whatever of the mesh is left, so a failing test leaves no process behind.
 */
async function upOnDeno(yaml: string, dir: string, args: string[], options: { permissions?: string[]; env?: Record<string, string> } = {}): Promise<DenoMesh> {
  const up = spawnDeno(CLI, ["up", yaml, "--dir", dir, "--quiet", ...args], options.permissions ?? upPermissions(dir), { PATH: pathWith(denoBinary()), ...options.env });
  const mesh: DenoMesh = {
    up,
    dir,
    async [Symbol.asyncDispose]() {
      if (up.proc.exitCode === null && up.proc.signalCode === null) {
        up.proc.kill("SIGTERM");
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([up.proc.exited, new Promise((resolve) => (timer = setTimeout(resolve, 15_000)))]);
        clearTimeout(timer);
      }
      await up[Symbol.asyncDispose]();
      for (const pid of meshProcesses(dir)) process.kill(pid, "SIGKILL");
    },
  };
  try {
    await up.waitForLine(/^mesh '[a-z0-9-]+' up in \d+ ms/, 40_000);
  } catch (error) {
    await mesh[Symbol.asyncDispose]();
    throw error;
  }
  return mesh;
}

/** Connects a Bun client to the mesh in `dir`; closed on dispose. */
async function bunClient(dir: string) {
  const client = await connectMesh({ dir, name: "bun-client" });
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.close() });
}

describe("a mesh on Deno", () => {
  test("up with the start:deno permissions: Deno actors, a Bun client, the gateway on Deno (A2A and MCP too), ps, send, trace, SIGTERM", async () => {
    using tmp = tempDir("hm-deno-mesh-");
    const yaml = join(tmp.path, "mesh.yaml");
    writeFileSync(yaml, `mesh: { name: deno-up }\ngateway: { port: 0 }\nsupervisor:\n  children:\n    - { actor: echo, module: ${ECHO} }\n`);
    const dir = join(tmp.path, "run");
    await using mesh = await upOnDeno(yaml, dir, []);

    // A Bun program calls the actor the Deno supervisor started, on Deno by default.
    await using client = await bunClient(dir);
    expect((await client.request("echo", { text: "from bun 🌍" }, { timeoutMs: 10_000 })).payload).toEqual({ text: "from bun 🌍" });
    const actorPid = client.registry.byAddress("echo")!.pid!;
    expect(cmdline(actorPid)).toMatch(/deno run .*src\/actor\/host-main\.ts/);
    const gatewayPid = client.registry.byAddress("gateway")!.pid!;
    expect(cmdline(gatewayPid)).toMatch(/deno run .*src\/gateway\/gateway-main\.ts/);

    // The gateway on Deno.serve: HTTP on its TCP port and on gateway.sock, and the WebSocket.
    const url = /^gateway: (http:\/\/127\.0\.0\.1:\d+) {2}and {2}(.*gateway\.sock)$/.exec(mesh.up.lines.find((l) => l.startsWith("gateway: ")) ?? "");
    expect(url).not.toBeNull();
    const [, base, socket] = url!;
    const meta = { version: "1.2", msg_type: 1, sender_id: "a1b2c3", receiver_id: "echo", ttl: 300, trace_id: "denotrace1" };
    const invoked = await fetch(`${base}/hermes/v1/invoke`, { method: "POST", headers: { "content-type": "application/hermes+json" }, body: JSON.stringify({ meta, payload: { task_id: "x1", via: "http" } }) });
    expect(invoked.status).toBe(200);
    expect(await invoked.json()).toMatchObject({ meta: { msg_type: 2, sender_id: "echo", trace_id: "denotrace1" }, payload: { task_id: "x1", via: "http" } });
    // A chunked body (no Content-Length) is counted as it streams on Deno too: 413 code 6 past the limit, answered under it.
    const chunked = (text: string) => fetch(`${base}/hermes/v1/invoke`, { method: "POST", headers: { "content-type": "application/json" }, body: chunkedBody(text) });
    const big = await chunked(JSON.stringify({ meta, payload: { pad: "x".repeat(2 * 1024 * 1024) } }));
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ error_code: 6 });
    expect(await (await chunked(JSON.stringify({ meta, payload: { via: "chunks" } }))).json()).toMatchObject({ payload: { via: "chunks" } });
    const health = await fetch("http://localhost/health", { unix: socket! });
    expect(await health.json()).toMatchObject({ status: "ok", mesh: "deno-up", actors: 1, healthy: 1 });
    const frames = await new Promise<unknown[]>((resolve, reject) => {
      const seen: unknown[] = [];
      const ws = new WebSocket(`${base!.replace("http", "ws")}/hermes/v1/stream`);
      const timer = setTimeout(() => (ws.close(), reject(new Error(`no answer on the WebSocket; got ${JSON.stringify(seen)}`))), 10_000);
      ws.onopen = () => ws.send(JSON.stringify({ meta: { ...meta, trace_id: "denows1" }, payload: { task_id: "w1", progress: 2 } }));
      ws.onmessage = (event) => {
        const frame = JSON.parse(String(event.data)) as { meta: { msg_type: number } };
        seen.push(frame);
        if (frame.meta.msg_type === 2) {
          clearTimeout(timer);
          ws.close();
          resolve(seen);
        }
      };
      ws.onerror = () => (clearTimeout(timer), reject(new Error("WebSocket error")));
    });
    expect(frames).toMatchObject([{ meta: { msg_type: 3 }, payload: { step: 1 } }, { meta: { msg_type: 3 }, payload: { step: 2 } }, { meta: { msg_type: 2 }, payload: { task_id: "w1", progress: 2 } }]);

    // A2A and MCP on the Deno gateway: the SDKs load there too.
    const a2a = await fetch(`${base}/a2a`, {
      method: "POST", headers: { "content-type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "deno-m1", role: "ROLE_USER", parts: [{ data: { via: "a2a" } }], metadata: { skill: "echo" } } } }),
    });
    const task = (await a2a.json()) as { result: { task: { status: { state: string }; artifacts: Array<{ parts: unknown[] }> } } };
    expect(task.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.result.task.artifacts[0]!.parts[0]).toMatchObject({ data: { via: "a2a" } });
    const mcp = await fetch(`${base}/mcp`, {
      method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { via: "mcp" } } }),
    });
    expect(mcp.status).toBe(200);
    const line = (await mcp.text()).split("\n").find((l) => l.startsWith("data: "));
    expect(JSON.parse(line!.slice(6))).toMatchObject({ id: 2, result: { structuredContent: { via: "mcp" } } });

    // ps, send and trace run by Deno too.
    const ps = denoCli(dir, "ps", "--dir", dir, "--json");
    expect(ps.err).toBe("");
    const entries = JSON.parse(ps.out).entries as Array<{ address: string; pid: number; health: string }>;
    expect(entries.find((e) => e.address === "echo")).toMatchObject({ pid: actorPid, health: "healthy" });
    expect(entries.map((e) => e.address)).toContain("gateway");
    expect(denoCli(dir, "ps", "--dir", dir).out).toMatch(/^echo\s+actor\s+\d+\s+healthy\s+0/m);
    expect(denoCli(dir, "send", "echo", '{"text":"你好"}', "--dir", dir)).toMatchObject({ code: 0, out: '{"text":"你好"}\n' });
    const fromFile = join(tmp.path, "payload.json");
    writeFileSync(fromFile, '{"from":"file"}');
    expect(denoCli(dir, "send", "echo", `@${fromFile}`, "--dir", dir).out).toBe('{"from":"file"}\n');
    let trace = denoCli(dir, "trace", "denotrace1", "--dir", dir);
    await waitFor(() => (trace = denoCli(dir, "trace", "denotrace1", "--dir", dir)).code === 0, "the invoke's trace in the event logs", 10_000);
    expect(trace.out).toMatch(/gateway\s+request → echo/);

    // SIGTERM stops every actor and the gateway, and removes the sockets.
    mesh.up.proc.kill("SIGTERM");
    expect(await mesh.up.proc.exited).toBe(0);
    expect(mesh.up.lines).toContain("stopped: every actor exited, sockets removed");
    expect([actorPid, gatewayPid].filter(alive)).toEqual([]);
    expect(readdirSync(dir).filter((f) => f.endsWith(".sock"))).toEqual([]);
    expect(existsSync(join(dir, "mesh.json"))).toBe(false);
  }, 90_000);

  test("a Deno actor killed with SIGKILL under the Deno supervisor is restarted and answers", async () => {
    using tmp = tempDir("hm-deno-mesh-");
    const yaml = join(tmp.path, "mesh.yaml");
    writeFileSync(yaml, `mesh: { name: deno-kill }\nsupervisor:\n  children:\n    - { actor: echo, module: ${ECHO} }\n`);
    const dir = join(tmp.path, "run");
    await using _mesh = await upOnDeno(yaml, dir, ["--no-gateway"]);
    await using client = await bunClient(dir);
    expect((await client.request("echo", { n: 1 }, { timeoutMs: 10_000 })).payload).toEqual({ n: 1 });
    const before = client.registry.byAddress("echo")!.pid!;
    process.kill(before, "SIGKILL");
    await waitFor(() => {
      const entry = client.registry.byAddress("echo");
      return entry?.health === "healthy" && entry.pid !== undefined && entry.pid !== before;
    }, "echo restarted", 20_000);
    expect((await client.request("echo", { n: 2 }, { timeoutMs: 10_000 })).payload).toEqual({ n: 2 });
    const after = client.registry.byAddress("echo")!;
    expect(after.restarts).toBe(1);
    expect(alive(before)).toBe(false);
    expect(cmdline(after.pid!)).toMatch(/deno run .*src\/actor\/host-main\.ts/);
  }, 60_000);

  test("a runtime: bun actor under the Deno supervisor runs on Bun, and without Bun the file fails at load", async () => {
    using tmp = tempDir("hm-deno-mesh-");
    const yaml = join(tmp.path, "mesh.yaml");
    writeFileSync(yaml, `mesh: { name: deno-mixed }\nsupervisor:\n  children:\n    - { actor: dino, module: ${RUNTIME_INFO} }\n    - { actor: bunny, module: ${RUNTIME_INFO}, runtime: bun }\n`);
    const dir = join(tmp.path, "run");

    const noBun = Bun.spawnSync([denoBinary(), "run", "--no-prompt", "--quiet", ...upPermissions(dir), CLI, "up", yaml, "--dir", dir, "--no-gateway"], {
      env: { ...process.env, PATH: pathWith(denoBinary()), HERMES_BUN: join(tmp.path, "no-such-bun") },
      stdout: "pipe",
      stderr: "pipe",
      timeout: 30_000,
    });
    expect(noBun.exitCode).toBe(2);
    expect(noBun.stderr.toString()).toMatch(/mesh\.yaml:5:\d+: supervisor\.children\[1\]\.runtime: no Bun binary found for this actor\. .*npm install/);

    // The Bun of $HERMES_BUN, allowed by its path.
    const bun = findBun()!;
    const permissions = upPermissions(dir).map((flag) => (flag === "--allow-run=deno" ? `--allow-run=deno,${bun}` : flag));
    await using _mesh = await upOnDeno(yaml, dir, ["--no-gateway"], { permissions, env: { HERMES_BUN: bun } });
    await using client = await bunClient(dir);
    const { payload } = await client.request("dino", { call: "bunny" }, { timeoutMs: 10_000 });
    expect(payload).toMatchObject({ runtime: "deno", address: "dino", answer: { runtime: "bun", address: "bunny" } });
  }, 60_000);
});
