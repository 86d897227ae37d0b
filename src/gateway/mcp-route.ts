import type { Hono } from "hono";
import type { McpHttpHandler } from "@modelcontextprotocol/server";
import { AccessPolicy, accessRequestOf, type AccessSettings } from "./access-policy.ts";
import type { McpServerOptions } from "./mcp-server.ts";

/** Where the gateway serves MCP. */
export const MCP_PATH = "/mcp";

/** How {@link mountMcp} serves, beyond the server's own options. */
export interface McpRouteOptions extends McpServerOptions {
  /** Largest request body, bytes (the SDK's default otherwise). */
  bodyLimit?: number;
  /**
   * Who may call: an AccessPolicy, or its settings (`allowedHosts`, `allowedOrigins`, `token`).
   * Default: a policy of its own, as the gateway's with nothing configured: loopback Host values
   * and same-origin browsers only (DNS rebinding and cross-site requests are 403 code 5), no
   * token. `false` only where the app's own middleware checks Host, Origin and the token already.
   */
  access?: AccessPolicy | AccessSettings | false;
}

/**
 * Serves the mesh's MCP server (src/gateway/mcp-server.ts) over Streamable HTTP at `/mcp`,
 * stateless: revision 2026-07-28, and 2025 clients through the SDK's stateless fallback. Host
 * and Origin are checked first (see `access`); the gateway checks them, and its bearer token, in
 * its own middleware. Tool list changes reach 2026 clients that listen (`subscriptions/listen`);
 * 2025 clients have no stream to hear them on in stateless mode and see the new list when they
 * next ask. The SDK loads on the first MCP request, so a gateway nobody asks for MCP starts as
 * fast as before.
 *
 * @example
 * const app = new Hono();
 * mountMcp(app, { registry: mesh.registry, mesh, meshName: "demo", access: { token: mcpToken, allowedOrigins: ["https://ide.example.com"] } });
 * Bun.serve({ hostname: "127.0.0.1", port: 8931, fetch: app.fetch });
 */
export function mountMcp(app: Hono<any>, options: McpRouteOptions): void {
  const policy = options.access === false ? undefined : options.access instanceof AccessPolicy ? options.access : new AccessPolicy(options.access);
  let handler: Promise<McpHttpHandler> | undefined;
  const load = async (): Promise<McpHttpHandler> => {
    const [{ createMcpHandler }, { createMcpServer }] = await Promise.all([import("@modelcontextprotocol/server"), import("./mcp-server.ts")]);
    const mcp = createMcpServer(options);
    const http = createMcpHandler(() => mcp.server(), {
      legacy: "stateless",
      ...(options.bodyLimit !== undefined && { maxRequestBodySize: options.bodyLimit }),
    });
    mcp.onToolsChanged(() => http.notify.toolsChanged());
    return http;
  };
  app.all(MCP_PATH, async (c) => {
    let cors: Record<string, string> | undefined;
    if (policy) {
      const verdict = policy.check(accessRequestOf(c.req.raw, MCP_PATH, false));
      if (verdict.type === "refused") return c.json(verdict.error.toPayload(), verdict.status, verdict.headers);
      cors = verdict.cors;
      // An allowed foreign origin's preflight, which browsers send without the token: the headers
      // it asks for are granted (2026 clients send Mcp-Method, Mcp-Name and Mcp-Param-* headers).
      if (cors && c.req.method === "OPTIONS") {
        const asked = c.req.header("access-control-request-headers");
        return c.body(null, 204, { ...cors, "access-control-allow-methods": "GET, POST, DELETE", ...(asked && { "access-control-allow-headers": asked }), "access-control-max-age": "600" });
      }
      const token = policy.checkToken(MCP_PATH, c.req.header("authorization"), c.req.query("token"));
      if (token.type === "refused") return c.json(token.error.toPayload(), token.status, { ...cors, ...token.headers });
    }
    const http = await (handler ??= load().catch((error) => {
      handler = undefined; // the next request tries again
      throw error;
    }));
    const response = await http.fetch(c.req.raw);
    if (!cors) return response;
    const headers = new Headers(response.headers);
    for (const [name, value] of Object.entries(cors)) headers.set(name, value);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  });
}
