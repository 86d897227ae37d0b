/**
 * The MCP assertions every transport of the mesh's MCP server passes (HTTP at the gateway in
 * mcp.test.ts, stdio in test/cli/mcp.test.ts), with the official client of either revision.
 */
import { expect, test } from "bun:test";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";

/** The mesh behind them: the example echo and calculator actors. */
export const MCP_MESH = `
mesh:
  name: mcp
supervisor:
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
    - actor: calculator
      module: {ACTORS}/calculator.ts
`;

/** What a test does with an MCP client, whichever SDK it comes from. */
export interface Mcp extends AsyncDisposable {
  revision: string | undefined;
  listTools(): Promise<Array<{ name: string; description?: string; inputSchema: Record<string, unknown> }>>;
  callTool(name: string, args: Record<string, unknown>, options?: { onprogress?: (p: { progress: number; total?: number; message?: string }) => void; signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<any>;
  /** The tool lists the client fetched after each notifications/tools/list_changed. */
  changes: Array<string[]>;
}

/** The v2 client pinned to 2026-07-28, or the v1 SDK client (2025-11-25). */
export async function connectClient(sdk: "v2" | "v1", transport: () => unknown): Promise<Mcp> {
  if (sdk === "v2") {
    const changes: Array<string[]> = [];
    const client = new ClientV2(
      { name: "mcp-test-v2", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } }, listChanged: { tools: { debounceMs: 0, onChanged: (_e, tools) => tools && changes.push(tools.map((t) => t.name)) } } },
    );
    await client.connect(transport() as Parameters<ClientV2["connect"]>[0]);
    return {
      revision: client.getNegotiatedProtocolVersion(),
      changes,
      listTools: async () => (await client.listTools()).tools as any,
      callTool: (name, args, o = {}) =>
        client.callTool({ name, arguments: args, ...(o.meta && { _meta: o.meta }) }, { ...(o.onprogress && { onprogress: o.onprogress }), ...(o.signal && { signal: o.signal }) }),
      [Symbol.asyncDispose]: () => client.close(),
    };
  }
  const changes: Array<string[]> = [];
  const client = new ClientV1({ name: "mcp-test-v1", version: "1.0.0" }, { listChanged: { tools: { debounceMs: 0, onChanged: (_e, tools) => tools && changes.push(tools.map((t) => t.name)) } } });
  const t = transport() as Parameters<ClientV1["connect"]>[0];
  // The v1 client hands the negotiated revision to its transport, and keeps it nowhere else.
  let revision: string | undefined;
  const setProtocolVersion = t.setProtocolVersion?.bind(t);
  t.setProtocolVersion = (version) => {
    revision = version;
    setProtocolVersion?.(version);
  };
  await client.connect(t);
  return {
    revision,
    changes,
    listTools: async () => (await client.listTools()).tools as any,
    callTool: (name, args, o = {}) =>
      client.callTool({ name, arguments: args, ...(o.meta && { _meta: o.meta }) }, undefined, { ...(o.onprogress && { onprogress: o.onprogress }), ...(o.signal && { signal: o.signal }) }),
    [Symbol.asyncDispose]: () => client.close(),
  };
}

/** The assertions both transports (HTTP here, stdio in test/cli/mcp.test.ts) make with both clients. */
export function sharedToolTests(sdk: "v2" | "v1", open: () => Promise<Mcp>): void {
  test(`${sdk}: negotiates ${sdk === "v2" ? "2026-07-28" : "2025-11-25"}, lists the capabilities with a schema, and 2+2 answers 4`, async () => {
    await using mcp = await open();
    expect(mcp.revision).toBe(sdk === "v2" ? "2026-07-28" : "2025-11-25");
    const tools = await mcp.listTools();
    expect(tools.map((t) => t.name)).toEqual(["calculator", "echo"]);
    expect(tools[0]).toMatchObject({ description: expect.stringContaining("arithmetic"), inputSchema: { type: "object", required: ["expression"], properties: { expression: { type: "string" } } } });
    const result = await mcp.callTool("calculator", { expression: "2+2" });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ result: 4, expression: "2+2" });
    expect(result.content).toEqual([{ type: "text", text: JSON.stringify({ result: 4, expression: "2+2" }) }]);
  });

  test(`${sdk}: Hermes progress arrives as progress notifications before the result`, async () => {
    await using mcp = await open();
    const seen: Array<{ progress: number; message?: string }> = [];
    // Three progress messages, then a while of work before the answer, as a long request goes.
    const result = await mcp.callTool("echo", { progress: 3, sleep_ms: 100 }, { onprogress: (p) => seen.push(p) });
    expect(seen.map((p) => p.progress)).toEqual([1, 2, 3]);
    expect(seen[0]!.message).toBe(JSON.stringify({ step: 1 }));
    expect(result.structuredContent).toEqual({ progress: 3, sleep_ms: 100 });
  });

  test(`${sdk}: the gateway's JSON forms in arguments reach the actor as values, and its answer comes back in them`, async () => {
    await using mcp = await open();
    const sent = { big: { $bigint: "1152921504606846976" }, small: { $bigint: "42" }, bin: { $bin: "AQID" }, m: { $entries: [[1, "a"]] }, named: { $entries: [["a", 1]] } };
    const result = await mcp.callTool("echo", sent);
    expect(result.isError).toBeFalsy();
    // What the echo actor got and answered, back in JSON: 42 fits a number, a map with string keys is a plain object.
    const back = { big: { $bigint: "1152921504606846976" }, small: 42, bin: { $bin: "AQID" }, m: { $entries: [[1, "a"]] }, named: { a: 1 } };
    expect(result.structuredContent).toEqual(back);
    expect(JSON.parse(result.content[0].text)).toEqual(back);
  });

  test(`${sdk}: a bad expression is an isError result keeping code 2; so are arguments the schema refuses`, async () => {
    await using mcp = await open();
    const bad = await mcp.callTool("calculator", { expression: "2+" });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({ error_code: 2, error_name: "INVALID_REQUEST", expression: "2+" });
    expect(bad.content[0].text).toStartWith("error 2 INVALID_REQUEST: ");
    const missing = await mcp.callTool("calculator", { formula: "2+2" });
    expect(missing.isError).toBe(true);
    expect(missing.structuredContent).toMatchObject({ error_code: 2, reason: expect.stringContaining("expression") });
  });

  test(`${sdk}: an unknown tool is an error naming the known ones`, async () => {
    await using mcp = await open();
    const error = await mcp.callTool("ocr", {}).then(() => undefined, (e: unknown) => e as { message: string; code?: number; data?: any });
    expect(error?.message).toContain("unknown tool 'ocr'; the known tools are: calculator, echo");
    expect(error?.data).toMatchObject({ error_code: 4, available_tools: ["calculator", "echo"] });
  });

  test(`${sdk}: a deadline asked for in _meta ends a slow call with code 3`, async () => {
    await using mcp = await open();
    const t0 = performance.now();
    const late = await mcp.callTool("echo", { sleep_ms: 20_000 }, { meta: { "hermes-mesh/timeout_ms": 300 } });
    expect(late.isError).toBe(true);
    expect(late.structuredContent).toMatchObject({ error_code: 3, error_name: "TASK_TIMEOUT" });
    expect(performance.now() - t0).toBeLessThan(10_000);
  });
}

