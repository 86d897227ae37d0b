/**
 * The HTTP gateway of a mesh as the root supervisor's last child: its options from the mesh
 * file or from code, and its process (src/gateway/gateway-main.ts) on the supervisor's runtime.
 */
import { join } from "node:path";
import type { MeshNatsSettings } from "../../mesh/control-protocol.ts";
import type { ChildSpec as SupervisedChild } from "./child-spec.ts";
import { requireDeno, denoHostCommand } from "./deno-runtime.ts";
import type { MeshFile } from "./mesh-file.ts";
import { memberProcess, READY_LINE } from "./member-process.ts";
import { processChild } from "./process-child.ts";
import { THIS_RUNTIME } from "./runtime-binary.ts";

/** How the gateway listens. */
export interface GatewayOptions {
  port: number;
  host?: string;
  /** Bearer token HTTP clients must send. */
  token?: string;
  bodyLimitBytes?: number;
  /** Host values served besides the loopback names and `host`; default: the mesh file's `gateway.allowed_hosts`. */
  allowedHosts?: string[];
  /** Browser origins served besides the gateway's own; default: the mesh file's `gateway.allowed_origins`. */
  allowedOrigins?: string[];
}

const GATEWAY_MAIN = join(import.meta.dirname, "../gateway/gateway-main.ts");
const GATEWAY_LINE = "hermes-mesh:gateway ";

export function gatewayFromFile(meshFile: MeshFile): GatewayOptions | undefined {
  const g = meshFile.gateway;
  if (!g) return undefined;
  const token = g.token_env ? process.env[g.token_env] : undefined;
  if (g.token_env && !token) throw new Error(`gateway.token_env names ${g.token_env}, which is not set in the environment`);
  return { port: g.port, host: g.host, bodyLimitBytes: g.body_limit_bytes, allowedHosts: g.allowed_hosts, allowedOrigins: g.allowed_origins, ...(token !== undefined && { token }) };
}

/** Options given in code (e.g. by `hermes-mesh up`) keep the mesh file's allow-lists unless they set their own. */
export function withFileAllowLists(gateway: GatewayOptions, meshFile: MeshFile): GatewayOptions {
  return { ...gateway, allowedHosts: gateway.allowedHosts ?? meshFile.gateway?.allowed_hosts ?? [], allowedOrigins: gateway.allowedOrigins ?? meshFile.gateway?.allowed_origins ?? [] };
}

/**
 * The gateway as a supervised child: its own process, restarted like an actor, its address
 * (URL and socket) written into `ctx.at` when it says it listens.
 *
 * @example
 * rootSpec.children.push(gatewayChild({ port: 8000 }, { dir, name, token, events: true, scheduler: "least_loaded", nats: undefined, socketGroup: undefined, at, hidden: [] }));
 */
export function gatewayChild(
  gateway: GatewayOptions,
  ctx: {
    dir: string; name: string; token: string | undefined; events: boolean; scheduler: string; nats: MeshNatsSettings | undefined; socketGroup: number | undefined;
    onOutput?: (address: string, line: string) => void; at: { url: string; socket: string }; hidden: string[];
  },
): SupervisedChild {
  // On the supervisor's runtime; on Deno with what an actor host may do (it reads the package,
  // writes its socket and logs in the mesh dir, listens and dials), and nothing more. Without
  // --unstable-no-legacy-abort Deno.serve aborts a request's signal once it is answered (and
  // warns): with it the signal means what it means on Bun, the client went away.
  const runtime = THIS_RUNTIME === "bun"
    ? [process.execPath, GATEWAY_MAIN]
    : denoHostCommand(requireDeno("the gateway"), GATEWAY_MAIN, ctx.dir, ["--unstable-no-legacy-abort"]);
  const cmd = [
    ...runtime, "--dir", ctx.dir, "--mesh", ctx.name,
    "--port", String(gateway.port), "--host", gateway.host ?? "127.0.0.1",
    ...(gateway.bodyLimitBytes !== undefined ? ["--body-limit", String(gateway.bodyLimitBytes)] : []),
    ...(gateway.allowedHosts ?? []).flatMap((host) => ["--allowed-host", host]),
    ...(gateway.allowedOrigins ?? []).flatMap((origin) => ["--allowed-origin", origin]),
  ];
  const output = (line: string) => {
    if (line.startsWith(GATEWAY_LINE)) {
      const [url, socket] = line.slice(GATEWAY_LINE.length).split(" ");
      ctx.at.url = url!;
      ctx.at.socket = socket!;
    } else if (line !== READY_LINE) {
      ctx.onOutput?.("gateway", line);
    }
  };
  return {
    id: "gateway",
    shutdown: 5000,
    start: processChild(cmd, memberProcess(ctx, output, gateway.token !== undefined ? { HERMES_GATEWAY_TOKEN: gateway.token } : {}, "gateway")),
  };
}

