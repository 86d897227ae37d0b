import type { Hono } from "hono";
import type { McpHttpHandler } from "@modelcontextprotocol/server";
import type { McpServerOptions } from "./mcp-server.ts";

/** Where the gateway serves MCP. */
export const MCP_PATH = "/mcp";

/**
 * Serves the mesh's MCP server (src/gateway/mcp-server.ts) over Streamable HTTP at `/mcp`,
 * stateless: revision 2026-07-28, and 2025 clients through the SDK's stateless fallback. The
 * app's own middleware runs first (Host and Origin checks, the bearer token). Tool list changes
 * reach 2026 clients that listen (`subscriptions/listen`); 2025 clients have no stream to hear
 * them on in stateless mode and see the new list when they next ask. The SDK loads on the first
 * MCP request, so a gateway nobody asks for MCP starts as fast as before.
 *
 * @example
 * const app = new Hono();
 * mountMcp(app, { registry, mesh: node, meshName: "demo", bodyLimit: 1024 * 1024 });
 */
export function mountMcp(app: Hono<any>, options: McpServerOptions & { bodyLimit?: number }): void {
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
    const http = await (handler ??= load().catch((error) => {
      handler = undefined; // the next request tries again
      throw error;
    }));
    return http.fetch(c.req.raw);
  });
}
