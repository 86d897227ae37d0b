/**
 * The mesh's MCP server in one process: which registry entries become tools, the agent layer's
 * tools beside them (`createMcpServer({ tools })`), and when the list counts as changed. Served
 * through the SDK's own HTTP handler, called by the v2 client through an in-process fetch.
 */
import { describe, expect, test } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createMcpHandler } from "@modelcontextprotocol/server";
import { z } from "zod";
import type { Envelope } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { Registry, type RegistryEntry } from "../../mesh/registry.ts";
import { defineTool, ToolRegistry } from "../../src/agent/tool-registry.ts";
import { calculatorTool } from "../../src/agent/tools/calculator-tool.ts";
import { createMcpServer, type McpMesh, type McpServerOptions } from "../../src/gateway/mcp-server.ts";

function entry(name: string, fields: Partial<RegistryEntry> = {}): RegistryEntry {
  return {
    name, instance: 0, address: name, id: `id-${name}`, socket: `/tmp/${name}.sock`, capabilities: [], subscriptions: [],
    health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 0, kind: "actor", ...fields,
  };
}

const OBJECT = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };

/** A mesh that answers every request with what it was asked, and remembers the routes. */
function fakeMesh(): McpMesh & { routes: unknown[] } {
  const routes: unknown[] = [];
  return {
    routes,
    async request(route, payload) {
      routes.push(route);
      return { payload: { route, payload } } as unknown as Envelope;
    },
  };
}

/** The v2 client (2026-07-28) connected to a server built from `options`, in this process. */
async function connect(options: McpServerOptions): Promise<Client & AsyncDisposable> {
  const mcp = createMcpServer(options);
  const http = createMcpHandler(() => mcp.server());
  const client = new Client({ name: "unit", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(new StreamableHTTPClientTransport(new URL("http://mcp.test/mcp"), { fetch: (url, init) => http.fetch(new Request(String(url), init)) }));
  return Object.assign(client, {
    async [Symbol.asyncDispose]() {
      await client.close();
      await http.close();
      mcp.close();
    },
  });
}

describe("createMcpServer", () => {
  test("a tool per capability with an input schema; none for clients, capabilities without a schema, or non-object schemas", async () => {
    const registry = new Registry();
    registry.upsert(entry("text", { capabilities: ["upper", "lower", "count"], capabilityInfo: { upper: { description: "Upper-cases", inputSchema: OBJECT }, count: { inputSchema: { type: "array" } } } }));
    registry.upsert(entry("pool#1", { instance: 1, capabilities: ["upper"], capabilityInfo: { upper: { inputSchema: { type: "object" } } } }));
    registry.upsert(entry("cli", { kind: "client", capabilities: ["sneaky"], capabilityInfo: { sneaky: { inputSchema: OBJECT } } }));
    registry.upsert(entry("bare", { capabilities: ["untyped"], capabilityInfo: { untyped: { inputSchema: { properties: { n: { type: "number" } } } } } }));
    const mesh = fakeMesh();
    await using client = await connect({ registry, mesh });
    const { tools } = await client.listTools();
    expect(tools.map((t): unknown[] => [t.name, t.description, t.inputSchema])).toEqual([
      ["untyped", "The mesh capability 'untyped' (actor bare).", { type: "object", properties: { n: { type: "number" } } }],
      ["upper", "Upper-cases", { ...OBJECT }],
    ]);
    const result = await client.callTool({ name: "upper", arguments: { text: "hi" } });
    expect(result.structuredContent).toEqual({ route: { capability: "upper" }, payload: { text: "hi" } });
    expect(mesh.routes).toEqual([{ capability: "upper" }]);
  });

  test("the agent layer's tools are served beside the capabilities, and hide a capability of the same name", async () => {
    const registry = new Registry();
    registry.upsert(entry("calc", { capabilities: ["calculator", "echo"], capabilityInfo: { calculator: { inputSchema: OBJECT }, echo: { inputSchema: { type: "object" } } } }));
    const slow = defineTool({
      name: "slow",
      description: "Reports two steps, then waits for its signal",
      schema: z.object({ code: z.number().int().optional() }),
      async run({ code }, ctx) {
        if (code !== undefined) throw new HermesError(code as ErrorCode, "asked to fail", { asked: code });
        ctx.onProgress?.({ progress: 1, total: 2, message: "one" });
        ctx.onProgress?.({ progress: 2, total: 2, message: "two" });
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      },
    });
    const mesh = fakeMesh();
    await using client = await connect({ registry, mesh, tools: new ToolRegistry([calculatorTool(), slow]) });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["calculator", "echo", "slow"]);
    expect(tools[0]!.inputSchema).toMatchObject({ type: "object", required: ["expression"] });
    const four = await client.callTool({ name: "calculator", arguments: { expression: "2+2" } });
    expect(four.structuredContent).toEqual({ result: 4 });
    expect(four.content).toEqual([{ type: "text", text: "4" }]);
    expect(mesh.routes).toEqual([]); // the local tool answered, not the mesh
    const failed = await client.callTool({ name: "slow", arguments: { code: 11 } });
    expect(failed).toMatchObject({ isError: true, structuredContent: { error_code: 11, error_name: "RATE_LIMIT_EXCEEDED", asked: 11 } });
    const steps: Array<{ progress: number; total?: number; message?: string }> = [];
    const late = await client.callTool({ name: "slow", arguments: {}, _meta: { "hermes-mesh/timeout_ms": 100 } }, { onprogress: (p) => steps.push(p) });
    expect(steps).toEqual([{ progress: 1, total: 2, message: "one" }, { progress: 2, total: 2, message: "two" }]);
    expect(late.structuredContent).toMatchObject({ error_code: 3, timeout_ms: 100 });
  });

  test("the list counts as changed when a capability or its schema changes, not on load and health", () => {
    const registry = new Registry();
    registry.upsert(entry("a", { capabilities: ["one"], capabilityInfo: { one: { inputSchema: OBJECT } } }));
    const mcp = createMcpServer({ registry, mesh: fakeMesh() });
    let changes = 0;
    mcp.onToolsChanged(() => changes++);
    registry.patch("a", { queueDepth: 5, inFlight: 2, health: "unhealthy" });
    registry.upsert(entry("b", { capabilities: ["other"] })); // no schema: no tool
    expect(changes).toBe(0);
    registry.patch("a", { capabilityInfo: { one: { inputSchema: { ...OBJECT, required: [] } } } });
    expect(changes).toBe(1);
    registry.upsert(entry("c", { capabilities: ["two"], capabilityInfo: { two: { inputSchema: OBJECT } } }));
    registry.remove("a");
    expect(changes).toBe(3);
    expect(mcp.list().map((t) => t.name)).toEqual(["two"]);
    mcp.close();
    registry.remove("c");
    expect(changes).toBe(3);
  });

  test("values JSON has no type for (BigInt, binary, Map) travel in the gateway's JSON forms: arguments, results and progress", async () => {
    const registry = new Registry();
    registry.upsert(entry("echo", { capabilities: ["echo"], capabilityInfo: { echo: { inputSchema: { type: "object" } } } }));
    const received: unknown[] = [];
    const thrownByProgress: unknown[] = [];
    const mesh: McpMesh = {
      async request(_route, payload, options) {
        received.push(payload);
        // The link calls onProgress in its receive path: whatever goes wrong must stay out of it.
        for (const update of [{ step: 1, big: 2n ** 60n }, { step: 2, bin: new Uint8Array([1, 2, 3]) }]) {
          try {
            options?.onProgress?.(update as never, undefined as never);
          } catch (error) {
            thrownByProgress.push(error);
          }
        }
        return { payload: { big: 2n ** 60n, small: 7n, bin: new Uint8Array([1, 2, 3]), m: new Map<unknown, unknown>([[1, "a"]]) } } as unknown as Envelope;
      },
    };
    await using client = await connect({ registry, mesh });
    const steps: Array<{ progress: number; message?: string }> = [];
    const result = await client.callTool(
      { name: "echo", arguments: { n: { $bigint: "1152921504606846976" }, raw: { $bin: "AQID" }, pairs: { $entries: [[1, "a"]] } } },
      { onprogress: (p) => steps.push(p) },
    );
    expect(received).toEqual([{ n: 2n ** 60n, raw: new Uint8Array([1, 2, 3]), pairs: new Map([[1, "a"]]) }]);
    const forms = { big: { $bigint: "1152921504606846976" }, small: 7, bin: { $bin: "AQID" }, m: { $entries: [[1, "a"]] } };
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual(forms);
    expect(result.content).toEqual([{ type: "text", text: JSON.stringify(forms) }]);
    expect(thrownByProgress).toEqual([]);
    expect(steps).toEqual([
      { progress: 1, message: JSON.stringify({ step: 1, big: { $bigint: "1152921504606846976" } }) },
      { progress: 2, message: JSON.stringify({ step: 2, bin: { $bin: "AQID" } }) },
    ]);
    // A malformed form is refused before the mesh is asked, naming where it is.
    const bad = await client.callTool({ name: "echo", arguments: { n: { $bigint: "many" } } });
    expect(bad).toMatchObject({ isError: true, structuredContent: { error_code: 2, reason: "arguments.n: $bigint: a decimal integer as a string" } });
    expect(received).toHaveLength(1);
  });

  test("a failure whose fields hold a BigInt keeps its code, the fields in their JSON forms", async () => {
    const registry = new Registry();
    registry.upsert(entry("a", { capabilities: ["quota"], capabilityInfo: { quota: { inputSchema: { type: "object" } } } }));
    const mesh: McpMesh = {
      async request() {
        throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "over quota", { limit: 2n ** 60n });
      },
    };
    await using client = await connect({ registry, mesh });
    const result = await client.callTool({ name: "quota", arguments: {} });
    expect(result).toMatchObject({ isError: true, structuredContent: { error_code: 6, limit: { $bigint: "1152921504606846976" } } });
    expect(result.content).toEqual([{ type: "text", text: 'error 6 RESOURCE_EXHAUSTED: over quota {"limit":{"$bigint":"1152921504606846976"}}' }]);
  });

  test("a deadline in _meta is capped by maxTimeoutMs; the default applies otherwise", async () => {
    const registry = new Registry();
    registry.upsert(entry("a", { capabilities: ["wait"], capabilityInfo: { wait: { inputSchema: { type: "object" } } } }));
    const asked: unknown[] = [];
    const mesh: McpMesh = {
      async request(_route, _payload, options) {
        asked.push(options?.timeoutMs);
        throw new HermesError(ErrorCode.TASK_TIMEOUT, "late");
      },
    };
    await using client = await connect({ registry, mesh, timeoutMs: 1000, maxTimeoutMs: 5000 });
    await client.callTool({ name: "wait", arguments: {} });
    await client.callTool({ name: "wait", arguments: {}, _meta: { "hermes-mesh/timeout_ms": 2000 } });
    const capped = await client.callTool({ name: "wait", arguments: {}, _meta: { "hermes-mesh/timeout_ms": 3_600_000 } });
    expect(asked).toEqual([1000, 2000, 5000]);
    expect(capped.content).toEqual([{ type: "text", text: "error 3 TASK_TIMEOUT: late" }]);
  });
});
