/**
 * External MCP servers as agent tools (src/agent/mcp-tools.ts), against real server processes
 * built on both official SDKs (test/fixtures/mcp-server-fixture.ts): `@modelcontextprotocol/sdk`
 * 1.32 (protocol 2025-11-25) and `@modelcontextprotocol/server` 2.4 (2026-07-28), over stdio
 * and Streamable HTTP, through the tool registry, the agent loop and the agent actor.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadAgentsFile } from "../../src/agent/agent-config.ts";
import { AgentConfigSchema } from "../../src/agent/agent-config.ts";
import { runAgent } from "../../src/agent/agent-loop.ts";
import { mountMcpServers, type McpMount, type McpServerConfig } from "../../src/agent/mcp-tools.ts";
import { ScriptedModel } from "../../src/agent/scripted-model.ts";
import { ShortTermMemory } from "../../src/agent/short-term-memory.ts";
import type { ToolProgress } from "../../src/agent/tool-definition.ts";
import { ToolRegistry } from "../../src/agent/tool-registry.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { ACTORS, startTestMesh } from "../actor/mesh-harness.ts";
import { BUN, isAlive, spawnBun, tempDir, waitFor, type Child } from "../helpers.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/mcp-server-fixture.ts");
const stdio = (sdk: "v1" | "v2", env: Record<string, string> = {}): McpServerConfig => ({ kind: "stdio", command: [BUN, FIXTURE, "--sdk", sdk], env });
const ctx = (extra: Record<string, unknown> = {}) => ({ trace_id: "trace-1", signal: new AbortController().signal, ...extra });
const fail = (result: { ok: boolean; error?: unknown }) => {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result)}`);
  return result.error as Record<string, unknown> & { error_code: number; detail: string };
};

// Everything a test starts is stopped after it, passed or failed; every fixture process
// (probe siblings included) writes its pid to PID_FILE, and none may outlive the file's tests.
const opened: AsyncDisposable[] = [];
const track = <T extends AsyncDisposable>(thing: T): T => (opened.push(thing), thing);
const pidDir = tempDir("hm-mcp-");
const PID_FILE = join(pidDir.path, "pids");
const fixturePids = () => readFileSync(PID_FILE, "utf8").split("\n").filter(Boolean).map(Number);
afterEach(async () => {
  await Promise.allSettled(opened.splice(0).map((o) => o[Symbol.asyncDispose]()));
});
afterAll(async () => {
  await Promise.allSettled(opened.splice(0).map((o) => o[Symbol.asyncDispose]()));
  try {
    await waitFor(() => fixturePids().every((pid) => !isAlive(pid)), "every MCP fixture process to have exited", 10_000);
  } finally {
    for (const pid of fixturePids()) if (isAlive(pid)) process.kill(pid, "SIGKILL");
    pidDir[Symbol.dispose]();
  }
});
writeFileSync(PID_FILE, "");
const env = { MCP_FIXTURE_PID_FILE: PID_FILE };

/** agents.yaml in `dir`: the scripted provider (script.yaml there), the v1 fixture server as `calc` (its pids into `pids`), and one agent. */
function writeCalcAgents(dir: string, pids: string, agent: string): void {
  writeFileSync(join(dir, "agents.yaml"), `
provider: { kind: scripted, script: script.yaml }
mcp_servers:
  calc:
    command: [${JSON.stringify(BUN)}, ${JSON.stringify(FIXTURE)}, --sdk, v1]
    env: { MCP_FIXTURE_PID_FILE: ${JSON.stringify(pids)} }
agents:
  - ${agent}
`);
}

for (const sdk of ["v1", "v2"] as const) {
  const protocol = sdk === "v1" ? "2025-11-25" : "2026-07-28";
  describe(`a stdio MCP server on the ${sdk} SDK (protocol ${protocol})`, () => {
    let mcp: McpMount;
    let tools: ToolRegistry;
    const warnings: string[] = [];
    beforeAll(async () => {
      mcp = await mountMcpServers({ calc: stdio(sdk, env) }, { log: { info: () => {}, warn: (message) => warnings.push(message) } });
      tools = new ToolRegistry(mcp.tools);
    }, 20_000);
    afterAll(() => mcp?.close());

    test("its tools are registered as mcp.calc.<tool> with the schemas it declares; a name outside the rule is skipped and logged", () => {
      expect(mcp.servers).toEqual([{ name: "calc", protocolVersion: protocol, pid: expect.any(Number) }]);
      expect(tools.names()).toEqual(["mcp.calc.add", "mcp.calc.slow", "mcp.calc.fail", "mcp.calc.die", "mcp.calc.rpc_error", "mcp.calc.cancelled", "mcp.calc.echo_env"]);
      const [add] = tools.list(["mcp.calc.add"]);
      expect(add).toMatchObject({
        name: "mcp.calc.add",
        description: "Adds two numbers",
        parameters: { type: "object", properties: { a: { type: "number", description: "first addend" }, b: { type: "number" } }, required: ["a", "b"] },
      });
      expect(tools.list(["mcp.calc.slow"])[0]!.parameters.properties).toMatchObject({ steps: { type: "integer", minimum: 1, maximum: 1000 } });
      expect(mcp.skipped).toEqual([{ server: "calc", tool: "bad name", reason: expect.stringContaining("'mcp.calc.bad name' breaks the tool name rule") }]);
      expect(warnings.some((w) => w.includes("'bad name'") && w.includes("skipped"))).toBe(true);
    });

    test("a call runs on the server and answers its structured content; `mcp.calc.*` grants every tool of the server", async () => {
      expect(await tools.call("mcp.calc.add", '{"a": 40, "b": 2}', ctx(), ["mcp.calc.*"])).toEqual({ ok: true, value: { sum: 42 }, normalized: [] });
      expect(tools.names(["mcp.calc.*"])).toHaveLength(7);
      expect(fail(await tools.call("mcp.calc.add", { a: 1, b: 2 }, ctx(), ["mcp.other.*"])).error_code).toBe(ErrorCode.TOOL_NOT_FOUND);
    });

    test("bad arguments are code 2 from the local schema, before anything is sent", async () => {
      const error = fail(await tools.call("mcp.calc.add", { a: 1, b: "many" }, ctx()));
      expect(error).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, expected: expect.stringContaining("b: number") });
      expect(String(error.reason)).toContain("b:");
      // The server's own validation would have answered isError (code 7), not code 2.
      expect(fail(await tools.call("mcp.calc.slow", { steps: 0, delay_ms: 1 }, ctx()))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, reason: expect.stringContaining("steps") });
    });

    test("progress notifications reach ctx.onProgress while the call runs", async () => {
      const progress: ToolProgress[] = [];
      const result = await tools.call("mcp.calc.slow", { steps: 3, delay_ms: 20 }, ctx({ onProgress: (p: ToolProgress) => progress.push(p) }));
      expect(result).toMatchObject({ ok: true, value: "counted 3 steps" });
      // The last notification may race the result on 2025 servers; the first ones arrive before it.
      expect(progress.length).toBeGreaterThanOrEqual(2);
      expect(progress[0]).toEqual({ progress: 1, total: 3, message: "step 1 of 3" });
    });

    test("the Hermes deadline ends a call with code 3, the server is told to cancel, and the connection stays usable", async () => {
      const started = performance.now();
      const error = fail(await tools.call("mcp.calc.slow", { steps: 1000, delay_ms: 50 }, ctx({ timeoutMs: 200 })));
      expect(error).toMatchObject({ error_code: ErrorCode.TASK_TIMEOUT, timeout_ms: 200 });
      expect(performance.now() - started).toBeLessThan(2000);
      const cancelled = async () => ((await tools.call("mcp.calc.cancelled", {}, ctx())) as { value: unknown }).value;
      await waitFor(async () => (await cancelled()) === "1", "the server to see the cancellation");
      expect(await tools.call("mcp.calc.add", { a: 1, b: 1 }, ctx())).toMatchObject({ ok: true, value: { sum: 2 } });
    });

    test("a caller's abort in the middle of a call keeps the HermesError code it aborted with", async () => {
      const caller = new AbortController();
      const abort = () => caller.abort(new HermesError(ErrorCode.TTL_EXPIRED, "the task's ttl ran out"));
      const result = await tools.call("mcp.calc.slow", { steps: 1000, delay_ms: 20 }, ctx({ signal: caller.signal, onProgress: abort }));
      expect(fail(result)).toMatchObject({ error_code: ErrorCode.TTL_EXPIRED, detail: "the task's ttl ran out" });
    });

    test("an isError result is code 7 with the server's text; a Hermes code in its structured content is kept", async () => {
      const plain = fail(await tools.call("mcp.calc.fail", { message: "disk on fire" }, ctx()));
      expect(plain).toMatchObject({ error_code: ErrorCode.INTERNAL, server: "calc", tool: "fail" });
      expect(plain.detail).toContain("disk on fire");
      const coded = fail(await tools.call("mcp.calc.fail", { message: "quota used up", code: 6 }, ctx()));
      expect(coded).toMatchObject({ error_code: ErrorCode.RESOURCE_EXHAUSTED, detail: "quota used up", reason: "asked to fail", server: "calc", tool: "fail" });
    });

    test.if(sdk === "v1")("a JSON-RPC error is code 7 with its MCP code, or the Hermes code of a Hermes payload in its data", async () => {
      expect(fail(await tools.call("mcp.calc.rpc_error", {}, ctx()))).toMatchObject({ error_code: ErrorCode.INTERNAL, mcp_error_code: -32001, detail: expect.stringContaining("the server refused") });
      expect(fail(await tools.call("mcp.calc.rpc_error", { code: 8 }, ctx()))).toMatchObject({ error_code: ErrorCode.UNROUTABLE, detail: "refused with a Hermes code", known: ["x"], server: "calc", tool: "rpc_error" });
    });

    test("the stdio env reaches the server, with ${NAME} taken from the agent's environment", async () => {
      await using own = track(await mountMcpServers({ envy: stdio(sdk, { ...env, GREETING: "hello ${WHO}" }) }, { env: { WHO: "world" } }));
      const registry = new ToolRegistry(own.tools);
      expect(await registry.call("mcp.envy.echo_env", { name: "GREETING" }, ctx())).toMatchObject({ ok: true, value: "hello world" });
      // Only the small default environment is inherited, not the agent's secrets.
      process.env.HM_MCP_SECRET = "s3cret";
      try {
        expect(await registry.call("mcp.envy.echo_env", { name: "HM_MCP_SECRET" }, ctx())).toMatchObject({ ok: true, value: "(unset)" });
      } finally {
        delete process.env.HM_MCP_SECRET;
      }
    }, 20_000);

    test("a server that dies mid-call answers code 10, and so does every later call; its process is gone", async () => {
      const own = track(await mountMcpServers({ doomed: stdio(sdk, env) }));
      const pid = own.servers[0]!.pid!;
      const registry = new ToolRegistry(own.tools);
      const error = fail(await registry.call("mcp.doomed.die", {}, ctx()));
      expect(error).toMatchObject({ error_code: ErrorCode.UNAVAILABLE, server: "doomed", tool: "die" });
      expect(error.detail).toContain("MCP server 'doomed'");
      const later = fail(await registry.call("mcp.doomed.add", { a: 1, b: 2 }, ctx()));
      expect(later).toMatchObject({ error_code: ErrorCode.UNAVAILABLE, reason: "the MCP server is gone" });
      await waitFor(() => !isAlive(pid), "the dead server's process to be reaped");
    }, 20_000);
  });
}

describe("mounting", () => {
  test("close stops the stdio server's process", async () => {
    const mcp = track(await mountMcpServers({ calc: stdio("v1", env) }));
    const pid = mcp.servers[0]!.pid!;
    expect(isAlive(pid)).toBe(true);
    await mcp.close();
    await waitFor(() => !isAlive(pid), "the server process to exit after close");
  }, 20_000);

  test("a server that cannot be started is code 10 naming it and its command; the other servers are closed", async () => {
    const error = await mountMcpServers({
      calc: stdio("v1", env),
      broken: { kind: "stdio", command: [BUN, join(import.meta.dir, "no-such-server.ts")], env: {} },
    }).catch((e) => e);
    expect(error).toBeInstanceOf(HermesError);
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.message).toContain(`MCP server 'broken' (command: ${BUN} ${join(import.meta.dir, "no-such-server.ts")}) could not be started`);
    expect(error.fields).toMatchObject({ server: "broken", command: [BUN, expect.stringContaining("no-such-server.ts")] });
    const missing = await mountMcpServers({ nope: { kind: "stdio", command: ["/no/such/program"], env: {} } }).catch((e) => e);
    expect(missing).toMatchObject({ code: ErrorCode.UNAVAILABLE, message: expect.stringContaining("MCP server 'nope' (command: /no/such/program) could not be started") });
    // The server that did start was closed again.
    await waitFor(() => fixturePids().every((pid) => !isAlive(pid)), "the started server to be stopped");
  }, 20_000);

  test("an unreachable URL is code 10 naming it; an unset headers_env variable is code 2 naming it", async () => {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const url = `http://127.0.0.1:${server.port}/mcp`;
    server.stop(true);
    const error = await mountMcpServers({ web: { kind: "http", url, headers_env: {} } }, { startTimeoutMs: 5000 }).catch((e) => e);
    expect(error).toMatchObject({ code: ErrorCode.UNAVAILABLE, message: expect.stringContaining(`MCP server 'web' (url: ${url}) could not be reached`), fields: { server: "web", url } });
    const unset = await mountMcpServers({ web: { kind: "http", url, headers_env: { Authorization: "HM_UNSET_TOKEN" } } }, { env: {} }).catch((e) => e);
    expect(unset).toMatchObject({ code: ErrorCode.INVALID_REQUEST, message: expect.stringContaining("headers_env.Authorization names $HM_UNSET_TOKEN, which is not set") });
  });

  test("an error names a URL without its credentials and query, and no header value", async () => {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const at = `127.0.0.1:${server.port}/mcp`;
    server.stop(true);
    const config: McpServerConfig = { kind: "http", url: `http://agent:pa55-w0rd@${at}?api_key=q-s3cret-key`, headers_env: { Authorization: "HM_WEB_AUTH" } };
    const error: HermesError = await mountMcpServers({ web: config }, { startTimeoutMs: 5000, env: { HM_WEB_AUTH: "Bearer h3ader-t0ken" } }).catch((e) => e);
    const shown = JSON.stringify(error.toPayload());
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.message).toContain(`MCP server 'web' (url: http://<credentials>@${at}?<redacted>) could not be reached`);
    expect(error.fields.url).toBe(`http://<credentials>@${at}?<redacted>`);
    for (const secret of ["pa55-w0rd", "q-s3cret-key", "h3ader-t0ken"]) expect(shown).not.toContain(secret);
  });

  test("a stdio server's stderr is quoted by its last lines only, capped, without escapes, and without the values ${NAME} brought in", async () => {
    // Writes forty lines of noise, then a secret it was given, then waits (never answering) until its stdin closes.
    const script = [
      `require("node:fs").appendFileSync(process.env.MCP_FIXTURE_PID_FILE, process.pid + "\\n");`,
      `for (let i = 0; i < 40; i++) console.error("noise line " + i + " " + "x".repeat(60));`,
      `console.error("\\x1b[31mfatal:\\x1b[0m cannot open the store with key " + process.env.STORE_KEY);`,
      `console.error("last words");`,
      `process.stdin.on("end", () => process.exit(0)); process.stdin.resume();`,
    ].join("\n");
    const error: HermesError = await mountMcpServers(
      { mute: { kind: "stdio", command: [BUN, "-e", script], env: { ...env, STORE_KEY: "${HM_STORE_KEY}" } } },
      { startTimeoutMs: 1000, env: { HM_STORE_KEY: "k3y-of-the-st0re" } },
    ).catch((e) => e);
    expect(error).toBeInstanceOf(HermesError);
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.message).toStartWith("MCP server 'mute'");
    const tail = error.message.split("its stderr ended with: ")[1]!;
    expect(tail).toEndWith("fatal: cannot open the store with key <redacted>\nlast words");
    expect(tail.length).toBeLessThanOrEqual(403);
    expect(tail.split("\n").length).toBeLessThanOrEqual(5);
    expect(error.message).not.toContain("noise line 0 ");
    expect(error.message).not.toContain("\x1b");
    expect(JSON.stringify(error.toPayload())).not.toContain("k3y-of-the-st0re");
  }, 20_000);
});

for (const sdk of ["v1", "v2"] as const) {
  describe(`a Streamable HTTP MCP server on the ${sdk} SDK`, () => {
    test("lists and calls tools with headers from headers_env and progress; a server that dies mid-call is code 10", async () => {
      const child: Child = track(spawnBun(FIXTURE, ["--sdk", sdk, "--http"], env));
      const url = (await child.waitForLine(/^MCP_URL /)).split(" ")[1]!;
      // A key in the query reaches the server, and no error message.
      const mcp = track(await mountMcpServers({ web: { kind: "http", url: `${url}?key=q-s3cret`, headers_env: { "x-token": "HM_TEST_TOKEN" } } }, { env: { HM_TEST_TOKEN: "t0ken" } }));
      expect(mcp.servers).toEqual([{ name: "web", protocolVersion: sdk === "v1" ? "2025-11-25" : "2026-07-28", pid: undefined }]);
      const tools = new ToolRegistry(mcp.tools);
      expect(tools.names()).toContain("mcp.web.add");
      expect(await tools.call("mcp.web.add", { a: 2, b: 3 }, ctx())).toMatchObject({ ok: true, value: { sum: 5 } });
      expect(await tools.call("mcp.web.echo_env", { name: "x-token" }, ctx())).toMatchObject({ ok: true, value: "t0ken" });
      const progress: ToolProgress[] = [];
      expect(await tools.call("mcp.web.slow", { steps: 3, delay_ms: 10 }, ctx({ onProgress: (p: ToolProgress) => progress.push(p) }))).toMatchObject({ ok: true });
      expect(progress[0]).toEqual({ progress: 1, total: 3, message: "step 1 of 3" });
      expect(fail(await tools.call("mcp.web.slow", { steps: 1000, delay_ms: 50 }, ctx({ timeoutMs: 200 })))).toMatchObject({ error_code: ErrorCode.TASK_TIMEOUT });
      expect(fail(await tools.call("mcp.web.die", {}, ctx()))).toMatchObject({ error_code: ErrorCode.UNAVAILABLE, server: "web" });
      await child.proc.exited;
      const gone = fail(await tools.call("mcp.web.add", { a: 1, b: 1 }, ctx()));
      expect(gone).toMatchObject({ error_code: ErrorCode.UNAVAILABLE, detail: expect.stringContaining(`${url}?<redacted>`) });
      expect(JSON.stringify(gone)).not.toContain("q-s3cret");
    }, 20_000);
  });
}

describe("the agent layer", () => {
  test("the agent loop calls a tool of an MCP server started by the test, and the tool's progress is reported", async () => {
    const mcp = track(await mountMcpServers({ calc: stdio("v2", env) }));
    const model = new ScriptedModel([
      { tool_calls: [{ name: "mcp.calc.add", arguments: { a: 40, b: 2 } }] },
      { tool_calls: [{ name: "mcp.calc.slow", arguments: { steps: 2, delay_ms: 10 } }] },
      "The answer is 42.",
    ]);
    const config = AgentConfigSchema.parse({ name: "mathematician", system_prompt: "Add.", model: "m", tools: ["mcp.calc.*"] });
    const steps: Array<Record<string, unknown>> = [];
    const outcome = await runAgent(config, { model, tools: new ToolRegistry(mcp.tools), memory: new ShortTermMemory() }, {
      content: "40+2?",
      context_id: "ctx-1",
      trace_id: "trace-1",
      signal: new AbortController().signal,
      progress: (step) => steps.push(step),
    });
    expect(outcome).toMatchObject({ answer: "The answer is 42.", tool_calls: 2, steps: 3 });
    expect(model.requests[0]!.tools?.map((t) => t.name)).toEqual(["mcp.calc.add", "mcp.calc.slow", "mcp.calc.fail", "mcp.calc.die", "mcp.calc.rpc_error", "mcp.calc.cancelled", "mcp.calc.echo_env"]);
    const toolMessage = model.requests[1]!.messages.find((m) => m.role === "tool")!;
    expect(JSON.parse(toolMessage.content!)).toEqual({ ok: true, result: { sum: 42 } });
    expect(steps).toContainEqual({ agent: "mathematician", step: 2, kind: "tool_progress", tool: "mcp.calc.slow", progress: 1, total: 2, message: "step 1 of 2" });
  }, 20_000);

  test("the agent actor mounts the servers its tools name, reports tool progress to the requester, and stops them when it stops", async () => {
    using dir = tempDir("hm-mcp-agents-");
    const pids = join(dir.path, "agent-pids");
    writeFileSync(pids, "");
    writeFileSync(join(dir.path, "script.yaml"), `
tracks:
  - agent: counter
    turns:
      - tool_calls: [{ name: mcp.calc.slow, arguments: { steps: 3, delay_ms: 20 } }]
      - counted to three
`);
    writeCalcAgents(dir.path, pids, `{ name: counter, system_prompt: "Count.", model: m, tools: ["mcp.calc.*"] }`);
    const before = process.env.HERMES_AGENTS_FILE;
    process.env.HERMES_AGENTS_FILE = join(dir.path, "agents.yaml");
    try {
      const t = track(await startTestMesh(`
mesh: { name: mcp-agent-test }
supervisor:
  children:
    - actor: counter
      module: {ACTORS}/agent.ts
      capabilities: [count]
`));
      const client = await t.client();
      const progress: Array<Record<string, unknown>> = [];
      const reply = await client.request("counter", { task: "count to three" }, { timeoutMs: 20_000, onProgress: (p) => progress.push(p as Record<string, unknown>) });
      expect(String(reply.payload.answer)).toStartWith("counted to three");
      expect(progress).toContainEqual({ agent: "counter", step: 1, kind: "tool_progress", tool: "mcp.calc.slow", progress: 1, total: 3, message: "step 1 of 3" });
      const started = readFileSync(pids, "utf8").split("\n").filter(Boolean).map(Number);
      expect(started.some((pid) => isAlive(pid))).toBe(true);
      await t[Symbol.asyncDispose]();
      await waitFor(() => started.every((pid) => !isAlive(pid)), "the agent's MCP server to stop with the agent");
    } finally {
      if (before === undefined) delete process.env.HERMES_AGENTS_FILE;
      else process.env.HERMES_AGENTS_FILE = before;
      for (const pid of readFileSync(pids, "utf8").split("\n").filter(Boolean).map(Number)) if (isAlive(pid)) process.kill(pid, "SIGKILL");
    }
  }, 40_000);

  test("an agent whose start fails after its MCP servers were mounted stops them before failing", async () => {
    using dir = tempDir("hm-mcp-init-");
    const pids = join(dir.path, "agent-pids");
    writeFileSync(pids, "");
    writeFileSync(join(dir.path, "script.yaml"), "tracks:\n  - { agent: keeper, turns: [kept] }\n");
    writeCalcAgents(dir.path, pids, `{ name: keeper, system_prompt: "Keep.", model: m, tools: ["mcp.calc.*"], recall: { namespace: notes } }`);
    // The long-term memory opens after the mount, and cannot: its database path is a directory.
    mkdirSync(join(dir.path, "data", "keeper-facts.db"), { recursive: true });
    const saved = { file: process.env.HERMES_AGENTS_FILE, dir: process.env.HERMES_MESH_DIR };
    process.env.HERMES_AGENTS_FILE = join(dir.path, "agents.yaml");
    process.env.HERMES_MESH_DIR = dir.path;
    try {
      const { default: agent } = await import("../../actors/agent.ts");
      const quiet = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };
      const failed = await Promise.resolve(agent.init!({ name: "keeper", address: "keeper", instance: 0, log: quiet } as never)).then(() => undefined, (e: unknown) => e);
      expect(String(failed)).toContain("unable to open database file");
      const started = readFileSync(pids, "utf8").split("\n").filter(Boolean).map(Number);
      expect(started.length).toBeGreaterThan(0);
      // Without the close they would live until this (the agent's) process exits.
      await waitFor(() => started.every((pid) => !isAlive(pid)), "the MCP servers of the failed start to stop");
    } finally {
      for (const [key, value] of [["HERMES_AGENTS_FILE", saved.file], ["HERMES_MESH_DIR", saved.dir]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      for (const pid of readFileSync(pids, "utf8").split("\n").filter(Boolean).map(Number)) if (isAlive(pid)) process.kill(pid, "SIGKILL");
    }
  }, 20_000);
});

describe("mcp_servers in agents.yaml", () => {
  const load = (yaml: string) => {
    using dir = tempDir("hm-mcp-config-");
    const file = join(dir.path, "agents.yaml");
    writeFileSync(file, yaml);
    try {
      return { file, value: loadAgentsFile(file) };
    } catch (error) {
      return { file, error: error as HermesError };
    }
  };
  const AGENT = `agents:\n  - { name: a, system_prompt: p, model: m, tools: ["mcp.files.read", "mcp.web.*"] }\n`;

  test("stdio and HTTP servers are read, a stdio server's cwd resolved from the agents file", () => {
    const { file, value } = load(`mcp_servers:\n  files: { command: [bun, server.ts], env: { ROOT: /tmp } }\n  web: { url: "http://127.0.0.1:8931/mcp", headers_env: { Authorization: WEB_TOKEN } }\n${AGENT}`);
    expect(value!.mcp_servers).toEqual({
      files: { kind: "stdio", command: ["bun", "server.ts"], env: { ROOT: "/tmp" }, cwd: join(file, "..") },
      web: { kind: "http", url: "http://127.0.0.1:8931/mcp", headers_env: { Authorization: "WEB_TOKEN" } },
    });
  });

  test("bad entries are code 2 naming the file, line and field", () => {
    const cases: Array<[string, string]> = [
      [`mcp_servers:\n  Files: { command: [bun] }\n`, ":2:10: mcp_servers.Files: a server name matching [a-z][a-z0-9_-]*"],
      [`mcp_servers:\n  files: { command: "bun server.ts" }\n`, "mcp_servers.files.command: a list: the program and its arguments, e.g. [bun, server.ts]"],
      [`mcp_servers:\n  files: { env: { A: b } }\n`, "mcp_servers.files: needs command: [program, args...] (stdio) or url: http://... (Streamable HTTP)"],
      [`mcp_servers:\n  files: { command: [bun], url: "http://x/mcp" }\n`, "mcp_servers.files: either command (stdio) or url (Streamable HTTP), not both"],
      [`mcp_servers:\n  files: { url: "ftp://x/mcp" }\n`, "mcp_servers.files.url: an http:// or https:// URL"],
      [`mcp_servers:\n  files: { url: "http://x/mcp", cwd: /tmp }\n`, "mcp_servers.files.cwd: env and cwd are for stdio servers (command)"],
      [`mcp_servers:\n  files: { command: [bun], headers_env: { A: B } }\n`, "mcp_servers.files.headers_env: headers_env is for Streamable HTTP servers (url)"],
    ];
    for (const [yaml, message] of cases) {
      const { file, error } = load(`${yaml}agents:\n  - { name: a, system_prompt: p, model: m }\n`);
      expect(error).toBeInstanceOf(HermesError);
      expect(error!.code).toBe(ErrorCode.INVALID_REQUEST);
      expect(error!.message).toContain(file);
      expect(error!.message).toContain(message);
    }
  });

  test("an agent naming a server that mcp_servers does not define is code 2 listing the defined ones", () => {
    const { file, error } = load(`mcp_servers:\n  files: { command: [bun, server.ts] }\n${AGENT}`);
    expect(error!.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error!.message).toBe(`${file}:4:70: agents.0.tools.1: 'mcp.web.*' names MCP server 'web', which mcp_servers does not define (defined: files)`);
  });
});
