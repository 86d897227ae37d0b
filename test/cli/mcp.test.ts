/**
 * `hermes-mesh mcp --dir D`: the mesh's tools over stdio, spawned by the official clients'
 * own stdio transports (the v2 client at 2026-07-28, the v1 SDK client at 2025-11-25), the
 * way an IDE starts it. Standard output carries the protocol alone; logs go to standard error.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { joinMesh } from "../../mesh/join.ts";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";
import { connectClient, MCP_MESH, sharedToolTests, type Mcp } from "../gateway/mcp-cases.ts";
import { BUN, waitFor } from "../helpers.ts";

const CLI = join(import.meta.dir, "../../src/cli/main.ts");
const START_MS = 30_000;

describe("hermes-mesh mcp over stdio", () => {
  let t: TestMesh;
  /** Every server process a test started, killed at the end whatever happened. */
  const pids = new Set<number>();

  beforeAll(async () => {
    t = await startTestMesh(MCP_MESH);
  }, START_MS);
  afterAll(async () => {
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already, as it should be
      }
    }
    await t?.[Symbol.asyncDispose]();
  });

  /** A client of either SDK with `hermes-mesh mcp` as its child process, its stderr kept. */
  async function open(sdk: "v2" | "v1"): Promise<Mcp & { stderr: () => string; pid: number }> {
    let transport: StdioV2 | StdioV1 | undefined;
    const params = { command: BUN, args: [CLI, "mcp", "--dir", t.dir], stderr: "pipe" as const, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" } };
    let stderr = "";
    const mcp = await connectClient(sdk, () => {
      transport = sdk === "v2" ? new StdioV2(params) : new StdioV1(params);
      transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      return transport;
    });
    const pid = transport!.pid!;
    pids.add(pid);
    return {
      ...mcp,
      stderr: () => stderr,
      pid,
      async [Symbol.asyncDispose]() {
        await mcp[Symbol.asyncDispose]();
        await waitFor(() => !alive(pid), "the server process gone once its client closed", 10_000);
        pids.delete(pid);
      },
    };
  }

  sharedToolTests("v2", () => open("v2"));
  sharedToolTests("v1", () => open("v1"));

  for (const sdk of ["v2", "v1"] as const) {
    test(`${sdk}: logs go to stderr; a cancelled call cancels the Hermes request; the list follows the registry`, async () => {
      await using mcp = await open(sdk);
      await waitFor(() => mcp.stderr().includes("serving 2 tools"), "the server's line on stderr");
      const abort = new AbortController();
      const call = mcp.callTool("echo", { sleep_ms: 60_000 }, { signal: abort.signal }).then(() => "answered", () => "rejected");
      await waitFor(() => t.mesh.registry.byAddress("echo")!.inFlight === 1, "the echo actor busy with the call", 10_000);
      abort.abort(); // notifications/cancelled on the connection
      expect(await call).toBe("rejected");
      await waitFor(() => t.mesh.registry.byAddress("echo")!.inFlight === 0, "the echo actor free again", 10_000);

      const member = await joinMesh({
        kind: "actor", dir: t.dir, address: `shout-${sdk}`, spawnSecret: "", external: { graceMs: 1 },
        capabilities: ["shout"], capabilityInfo: { shout: { inputSchema: { type: "object", properties: { text: { type: "string" } } } } },
        onRequest: (request) => request.respond({ text: String(request.request.payload.text).toUpperCase() }),
      });
      try {
        await waitFor(() => mcp.changes.some((names) => names.includes("shout")), "a list_changed naming the new tool", 10_000);
        expect((await mcp.callTool("shout", { text: "hi" })).structuredContent).toEqual({ text: "HI" });
      } finally {
        await member.close();
      }
      await waitFor(() => mcp.changes.some((names) => names.length === 2 && !names.includes("shout")), "a list_changed without it", 10_000);
    });
  }

  for (const sdk of ["v2", "v1"] as const) {
    // The clients handle a notification a microtask late and a response at once, so notifications
    // read in the same chunk as the result are dropped; the server holds such a result back a moment.
    test(`${sdk}: every progress notification of a call answered at once after its progress arrives`, async () => {
      await using mcp = await open(sdk);
      for (let round = 0; round < 5; round++) {
        const seen: number[] = [];
        const result = await mcp.callTool("echo", { progress: 4 }, { onprogress: (p) => seen.push(p.progress) });
        expect(result.structuredContent).toEqual({ progress: 4 });
        expect(seen).toEqual([1, 2, 3, 4]);
      }
    });
  }

  test("a mesh that is not running is one clear line on stderr and exit 1, nothing on stdout", async () => {
    const proc = Bun.spawn([BUN, CLI, "mcp", "--dir", join(t.dir, "nowhere")], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    pids.add(proc.pid);
    expect(await proc.exited).toBe(1);
    expect(await new Response(proc.stdout).text()).toBe("");
    expect(await new Response(proc.stderr).text()).toMatch(/^hermes-mesh mcp: error 10: /);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
