/**
 * `mountMcp` on an app of its own (docs/interop.md, "Safe defaults"): the Host and Origin checks
 * are on without being asked for, so a program serving file tools from a hono app is not open to
 * DNS rebinding or a cross-site page; the settings add hosts, origins and a bearer token.
 */
import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { Envelope } from "../../mesh/envelope.ts";
import { Registry } from "../../mesh/registry.ts";
import { ToolRegistry } from "../../src/agent/tool-registry.ts";
import { calculatorTool } from "../../src/agent/tools/calculator-tool.ts";
import { mountMcp, type McpRouteOptions } from "../../src/gateway/mcp-route.ts";

const LIST = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** An app with nothing but mountMcp, served on loopback; `access` as given (or left out). */
function serve(access?: McpRouteOptions["access"]): { url: string } & AsyncDisposable {
  const app = new Hono();
  const mesh = { request: async () => ({ payload: {} }) as unknown as Envelope };
  mountMcp(app, { registry: new Registry(), mesh, tools: new ToolRegistry([calculatorTool()]), ...(access !== undefined && { access }) });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: app.fetch });
  return { url: `http://127.0.0.1:${server.port}/mcp`, [Symbol.asyncDispose]: () => server.stop(true) };
}

describe("mountMcp on an app of its own", () => {
  test("by default only loopback Host values and same-origin browsers are served: a rebound Host or a foreign page is 403 code 5", async () => {
    await using app = serve();
    const post = (headers: Record<string, string>) => fetch(app.url, { method: "POST", headers: { ...HEADERS, ...headers }, body: LIST });
    const rebound = await post({ host: `rebind.evil.example:${new URL(app.url).port}` });
    expect(rebound.status).toBe(403);
    expect(await rebound.json()).toMatchObject({ error_code: 5, auth_method: "host" });
    const foreign = await post({ origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toMatchObject({ error_code: 5, auth_method: "origin" });
    const noOrigin = await post({ "sec-fetch-site": "cross-site", "sec-fetch-mode": "cors" });
    expect(noOrigin.status).toBe(403);
    // A page of the same origin, and a client that is no browser, are served.
    expect((await post({ origin: new URL(app.url).origin })).status).toBe(200);
    const client = new Client({ name: "ide", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(app.url)));
    try {
      expect((await client.callTool({ name: "calculator", arguments: { expression: "6*7" } })).structuredContent).toEqual({ result: 42 });
    } finally {
      await client.close();
    }
  });

  test("settings add a bearer token and allowed origins; an allowed origin's preflight is answered and its answers carry CORS headers", async () => {
    await using app = serve({ token: "s3cret", allowedOrigins: ["https://ide.example"] });
    const post = (headers: Record<string, string>) => fetch(app.url, { method: "POST", headers: { ...HEADERS, ...headers }, body: LIST });
    const anonymous = await post({});
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error_code: 5, auth_method: "bearer" });
    expect((await post({ authorization: "Bearer wrong" })).status).toBe(401);
    expect((await post({ authorization: "Bearer s3cret" })).status).toBe(200);
    const preflight = await fetch(app.url, { method: "OPTIONS", headers: { origin: "https://ide.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type, mcp-method" } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://ide.example");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("authorization, content-type, mcp-method");
    const allowed = await post({ origin: "https://ide.example", authorization: "Bearer s3cret" });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://ide.example");
    expect((await post({ origin: "https://other.example", authorization: "Bearer s3cret" })).status).toBe(403);
  });

  test("access: false leaves the checks to the app's own middleware (the gateway's)", async () => {
    await using app = serve(false);
    const response = await fetch(app.url, { method: "POST", headers: { ...HEADERS, host: "rebind.evil.example" }, body: LIST });
    expect(response.status).toBe(200);
  });
});
