/**
 * MCP over Streamable HTTP at the gateway's /mcp, in front of a real mesh, driven by the
 * official clients of both protocol revisions: the v2 client (2026-07-28, stateless) and the
 * v1 SDK client (2025-11-25, through the server's stateless fallback).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { StreamableHTTPClientTransport as HttpV2 } from "@modelcontextprotocol/client";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { joinMesh } from "../../mesh/join.ts";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";
import { waitFor } from "../helpers.ts";
import { connectClient, MCP_MESH, sharedToolTests } from "./mcp-cases.ts";

/** Starting a mesh takes about a second; on a loaded 2-core machine it can take longer than bun's 5 s hook default. */
const START_MS = 30_000;
const TOKEN = "mcp-s3cret";
const EVIL = "https://evil.example";

describe("MCP at the gateway's /mcp", () => {
  let t: TestMesh;
  let url: string;
  const auth = { headers: { authorization: `Bearer ${TOKEN}` } };

  beforeAll(async () => {
    t = await startTestMesh(MCP_MESH, { gateway: { port: 0, token: TOKEN } });
    url = `${t.mesh.gateway!.url}/mcp`;
  }, START_MS);
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  sharedToolTests("v2", () => connectClient("v2", () => new HttpV2(new URL(url), { requestInit: auth })));
  sharedToolTests("v1", () => connectClient("v1", () => new HttpV1(new URL(url), { requestInit: auth })));

  test("v2: cancelling a call (its HTTP request aborts) cancels the Hermes request at the actor", async () => {
    await using mcp = await connectClient("v2", () => new HttpV2(new URL(url), { requestInit: auth }));
    const abort = new AbortController();
    const call = mcp.callTool("echo", { sleep_ms: 60_000 }, { signal: abort.signal }).then(() => "answered", () => "rejected");
    await waitFor(() => t.mesh.registry.byAddress("echo")!.inFlight === 1, "the echo actor busy with the call", 10_000);
    abort.abort();
    expect(await call).toBe("rejected");
    // echo answers early only when cancelled: without the Hermes cancel it would stay busy for a minute.
    await waitFor(() => t.mesh.registry.byAddress("echo")!.inFlight === 0, "the echo actor free again", 10_000);
  });

  test("v1: a 2025 client's notifications/cancelled has no session to find its call in; the client going away cancels it", async () => {
    const mcp = await connectClient("v1", () => new HttpV1(new URL(url), { requestInit: auth }));
    try {
      const abort = new AbortController();
      const call = mcp.callTool("echo", { sleep_ms: 60_000 }, { signal: abort.signal }).then(() => "answered", () => "rejected");
      await waitFor(() => t.mesh.registry.byAddress("echo")!.inFlight === 1, "the echo actor busy with the call", 10_000);
      abort.abort();
      expect(await call).toBe("rejected");
    } finally {
      await mcp[Symbol.asyncDispose](); // closes its open POST: the request's signal aborts
    }
    await waitFor(() => t.mesh.registry.byAddress("echo")!.inFlight === 0, "the echo actor free again", 10_000);
  });

  test("v2: the tool list follows the registry, with notifications/tools/list_changed", async () => {
    await using mcp = await connectClient("v2", () => new HttpV2(new URL(url), { requestInit: auth }));
    const member = await joinMesh({
      kind: "actor", dir: t.dir, address: "reverser", spawnSecret: "", external: { graceMs: 1 },
      capabilities: ["reverse"],
      capabilityInfo: { reverse: { description: "Reverses a text", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } } },
      onRequest: (request) => request.respond({ text: String(request.request.payload.text).split("").reverse().join("") }),
    });
    let closed = false;
    try {
      await waitFor(() => mcp.changes.some((names) => names.includes("reverse")), "a list_changed naming the new tool", 10_000);
      expect((await mcp.listTools()).map((tool) => tool.name)).toEqual(["calculator", "echo", "reverse"]);
      expect((await mcp.callTool("reverse", { text: "mesh" })).structuredContent).toEqual({ text: "hsem" });
      await member.close();
      closed = true;
      await waitFor(() => mcp.changes.some((names) => names.length === 2 && !names.includes("reverse")), "a list_changed without it", 10_000);
      expect((await mcp.listTools()).map((tool) => tool.name)).toEqual(["calculator", "echo"]);
    } finally {
      if (!closed) await member.close();
    }
  });

  test("malformed JSON-RPC gets JSON-RPC errors: not JSON -32700, not a message -32600, an unknown method -32601 (both revisions)", async () => {
    const post = async (body: string, headers: Record<string, string> = {}) => {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${TOKEN}`, ...headers }, body });
      const text = await response.text();
      // A 2025 answer comes as one server-sent event, the others as JSON.
      const json = response.headers.get("content-type")?.startsWith("text/event-stream") ? text.split("\n").find((line) => line.startsWith("data: "))!.slice(6) : text;
      return { status: response.status, body: JSON.parse(json) };
    };
    expect(await post("{not json")).toEqual({ status: 400, body: { jsonrpc: "2.0", id: null, error: { code: -32700, message: expect.stringContaining("Parse error") } } });
    expect(await post(JSON.stringify({ jsonrpc: "2.0", id: 1 }))).toMatchObject({ status: 400, body: { id: null, error: { code: -32600 } } });
    expect(await post(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "no/such", params: {} }))).toEqual({ status: 200, body: { jsonrpc: "2.0", id: 2, error: { code: -32601, message: "Method not found" } } });
    const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": { name: "curl", version: "1" } };
    const modern = await post(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "no/such", params: { _meta: meta } }), { "mcp-protocol-version": "2026-07-28", "mcp-method": "no/such" });
    expect(modern).toEqual({ status: 404, body: { jsonrpc: "2.0", id: 3, error: { code: -32601, message: "Method not found" } } });
  });

  test("the bearer token applies: none or a wrong one is 401 code 5, and a client without it cannot connect", async () => {
    const list = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
    const post = (headers: Record<string, string>) => fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(list) });
    for (const headers of [{}, { authorization: "Bearer wrong" }] as Array<Record<string, string>>) {
      const refused = await post(headers);
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({ error_code: 5, auth_method: "bearer" });
    }
    expect(await connectClient("v2", () => new HttpV2(new URL(url))).then(() => "connected", () => "refused")).toBe("refused");
    expect(await connectClient("v1", () => new HttpV1(new URL(url))).then(() => "connected", () => "refused")).toBe("refused");
  });

  test("a foreign Host (DNS rebinding) or a foreign browser Origin is refused on /mcp with 403 code 5", async () => {
    const port = new URL(url).port;
    const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } };
    const post = (headers: Record<string, string>) =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${TOKEN}`, ...headers }, body: JSON.stringify(initialize) });
    const rebound = await post({ host: `rebind.evil.example:${port}` });
    expect(rebound.status).toBe(403);
    expect(await rebound.json()).toMatchObject({ error_code: 5, auth_method: "host" });
    const foreign = await post({ origin: EVIL });
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toMatchObject({ error_code: 5, auth_method: "origin", origin: EVIL });
    // The same request from no browser at all is served.
    expect((await post({})).status).toBe(200);
  });
});
