#!/usr/bin/env bun
/**
 * The gateway process, supervised like an actor: joins the mesh through the control socket,
 * serves the gateway app on TCP (`--host`, `--port`; 0 picks a free port) and on
 * `<dir>/gateway.sock`, with Bun.serve on Bun and Deno.serve on Deno (the runtime of the
 * supervisor that started it), prints `hermes-mesh:gateway <url> <socket>` and then the ready line.
 * Argv: --dir D --mesh NAME [--port P] [--host H] [--body-limit BYTES] [--allowed-host H]...
 * [--allowed-origin O]... Tokens from the environment: HERMES_MESH_TOKEN (the mesh's),
 * HERMES_GATEWAY_TOKEN (bearer token of HTTP clients). Warns on stderr when bound to a
 * non-loopback address without a token.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { joinMesh } from "../../mesh/join.ts";
import { prepareSocketPath, removeSocketFile, setSocketMode, withPrivateUmask } from "../../mesh/socket-transport.ts";
import { EventLog } from "../observability/event-log.ts";
import { isLoopback } from "./access-policy.ts";
import { createGatewayApp, type GatewayBindings } from "./gateway-app.ts";
import { HistorySampler } from "./history-sampler.ts";

const ADDRESS = "gateway";
/** Bun's WebSocket handlers for Bun.serve; hono/bun reads Bun's globals as it loads, so not on Deno. */
const bunWebSocket = typeof Bun === "undefined" ? undefined : (await import("hono/bun")).websocket;

/** What the gateway uses of Deno's API (the type checker here knows Bun's globals only). */
declare const Deno: {
  serve(
    options: ({ hostname: string; port: number } | { path: string }) & { onListen?: () => void },
    handler: (request: Request) => Response | Promise<Response>,
  ): { addr: { port?: number }; shutdown(): Promise<void> };
};

/** One listener of the app: its TCP port (none on a Unix socket), and how to stop it. */
interface Listener {
  port: number | undefined;
  stop(): Promise<unknown>;
}

type FetchApp = { fetch(request: Request, env: GatewayBindings): Response | Promise<Response> };

/**
 * Serves `app` on a TCP address or a Unix socket: Bun.serve on Bun (WebSockets through its
 * server and hono's `websocket` handlers), Deno.serve on Deno (hono's Deno adapter upgrades
 * the request itself, see gateway-app.ts).
 */
function serve(app: FetchApp, at: { hostname: string; port: number } | { unix: string }): Listener {
  const listener = "unix" in at ? "unix" : "tcp";
  if (typeof Bun === "undefined") {
    // onListen: Deno prints "Listening on ..." to stdout otherwise, and stdout is the supervisor's channel.
    const options = "unix" in at ? { path: at.unix } : at;
    const server = Deno.serve({ ...options, onListen: () => {} }, (request) => app.fetch(request, { server: undefined, listener }));
    return { port: server.addr.port, stop: () => server.shutdown() };
  }
  const fetch = (request: Request, server: unknown) => app.fetch(request, { server, listener });
  const websocket = bunWebSocket!;
  const server = "unix" in at ? Bun.serve({ unix: at.unix, fetch, websocket }) : Bun.serve({ ...at, fetch, websocket, idleTimeout: 120 });
  return { port: server.port, stop: () => server.stop() };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dir: { type: "string" },
      mesh: { type: "string", default: "mesh" },
      port: { type: "string", default: "8000" },
      host: { type: "string", default: "127.0.0.1" },
      "body-limit": { type: "string", default: String(1024 * 1024) },
      "allowed-host": { type: "string", multiple: true, default: [] },
      "allowed-origin": { type: "string", multiple: true, default: [] },
    },
  });
  if (!values.dir) throw new Error("gateway: --dir is required");
  const dir = values.dir;
  const meshToken = process.env.HERMES_MESH_TOKEN || undefined;
  // Dial-only: answers come back on the connections the gateway opens.
  const member = await joinMesh({ dir, address: ADDRESS, ...(meshToken && { token: meshToken }) });
  const { node, registry, control } = member;
  const events = process.env.HERMES_EVENTS === "0" ? undefined : new EventLog(join(dir, "logs", "gateway.jsonl"), { actor: ADDRESS });
  const token = process.env.HERMES_GATEWAY_TOKEN || undefined;
  const stats = async () => ((await control.stats()).stats ?? {}) as Record<string, never>;
  // Sampled from now on, so the dashboard's charts show the last minutes when a page opens.
  const history = new HistorySampler({
    registry,
    stats,
    deadLetters: () => node.deadLetters(),
    ...(events && { supervisorLog: join(dir, "logs", "supervisor.jsonl") }),
  }).start();
  const app = createGatewayApp({
    node,
    registry,
    meshName: values.mesh,
    dir,
    stats,
    history,
    token,
    host: values.host,
    allowedHosts: values["allowed-host"],
    allowedOrigins: values["allowed-origin"],
    bodyLimit: Number(values["body-limit"]),
    ...(events && { events }),
  });
  if (!token && !isLoopback(values.host)) {
    console.error(JSON.stringify({
      ts: new Date().toISOString(), level: "warn", actor: ADDRESS,
      msg: `the gateway listens on ${values.host}, beyond this machine, without a token: anyone who reaches it may invoke actors. Set HERMES_GATEWAY_TOKEN (or gateway.token_env), or bind 127.0.0.1`,
    }));
  }
  const tcp = serve(app, { hostname: values.host, port: Number(values.port) });
  const socket = join(dir, "gateway.sock");
  await prepareSocketPath(socket);
  const unix = withPrivateUmask(socket, () => serve(app, { unix: socket }));
  // 0600, or 0660 with the group of a mesh shared with one (HERMES_SOCKET_GROUP).
  setSocketMode(socket);
  console.log(`hermes-mesh:gateway http://${values.host}:${tcp.port} ${socket}`);
  console.log("hermes-mesh:ready");

  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    history.stop();
    await Promise.allSettled([tcp.stop(), unix.stop()]);
    await app.close();
    removeSocketFile(socket);
    await member.close();
    await events?.close();
    process.exit(code);
  };
  process.on("SIGTERM", () => void stop(0));
  process.on("SIGINT", () => {});
  member.closed.then(() => void stop(1));
}

main().catch((error) => {
  console.error(JSON.stringify({ ts: new Date().toISOString(), level: "error", actor: ADDRESS, msg: "gateway failed to start", error: String(error) }));
  process.exit(1);
});
