import { parseArgs } from "node:util";
import { connectMesh } from "../actor/connect-mesh.ts";
import { MESH_ACCESS_OPTIONS, resolveMeshAccess, withAuthHint } from "./mesh-access.ts";

const USAGE = `Usage: hermes-mesh mcp [--dir D] [--token-env NAME] [--timeout ms]

Serves a running mesh's tools to an MCP client (an IDE, a desktop assistant) over stdio:
standard input and output carry the protocol (revision 2026-07-28, and 2025 clients),
everything else goes to standard error. Every actor capability that declares an input schema
is a tool; a call is a request to that capability, its progress messages become progress
notifications, and a failure is an isError result keeping the Hermes code. --timeout is the
deadline of a call (default 60000; a client may ask for another in _meta "hermes-mesh/timeout_ms").
No file or shell tools are served. It exits when its standard input closes. The mesh token
is read as by hermes-mesh send. See docs/interop.md for a client configuration.`;

/** `hermes-mesh mcp`: an MCP server over stdio until the client closes standard input. */
export async function runMcpCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...MESH_ACCESS_OPTIONS,
      timeout: { type: "string", default: "60000" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const timeoutMs = Number(values.timeout);
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
    console.error(`hermes-mesh mcp: --timeout must be a positive number of milliseconds, got '${values.timeout}'`);
    return 2;
  }
  const access = resolveMeshAccess(values);
  const mesh = await withAuthHint(access, () => connectMesh({ dir: access.dir, name: "mcp", token: access.token }));
  // Loaded only now: `hermes-mesh --help` and the other commands never pay for the SDK.
  const [{ createMcpServer }, { serveStdio }] = await Promise.all([import("../gateway/mcp-server.ts"), import("@modelcontextprotocol/server/stdio")]);
  const mcp = createMcpServer({ registry: mesh.registry, mesh, timeoutMs });
  // One connection, so one instance serves it (another may be made for a probe and dropped):
  // each hears that the tool list changed.
  const live = new Set<ReturnType<typeof mcp.server>>();
  const ended = Promise.withResolvers<void>();
  const handle = serveStdio(
    () => {
      const server = mcp.server();
      live.add(server);
      server.onclose = () => live.delete(server);
      return server;
    },
    { onerror: (error) => console.error(`hermes-mesh mcp: ${error.message}`) },
  );
  mcp.onToolsChanged(() => {
    for (const server of live) server.sendToolListChanged().catch(() => {});
  });
  process.stdin.once("end", () => ended.resolve());
  process.stdin.once("close", () => ended.resolve());
  const stop = () => ended.resolve();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  console.error(`hermes-mesh mcp: serving ${mcp.list().length} tools of the mesh in ${access.dir} on stdio`);
  try {
    await ended.promise;
    return 0;
  } finally {
    mcp.close();
    await handle.close().catch(() => {});
    await mesh.close();
  }
}
