/**
 * How the supervisor starts a member of the mesh (an actor instance, the gateway) as a process:
 * the mesh-wide settings in its environment, its output, and the line that says it is ready.
 */
import type { MeshNatsSettings } from "../../mesh/control-protocol.ts";
import { SOCKET_GROUP_ENV } from "../../mesh/socket-access.ts";
import type { ProcessChildOptions } from "./process-child.ts";

/** The line a member process prints once it is listening, initialised and registered. */
export const READY_LINE = "hermes-mesh:ready";

/**
 * How a mesh member process is started: the mesh-wide settings in its environment, without the
 * `hidden` variables of this process (the gateway's token), its output to `output`, started
 * only once it prints the ready line, and called `name` in errors.
 */
export function memberProcess(
  ctx: MeshSettings,
  output: (line: string) => void,
  env: Record<string, string> | (() => Record<string, string>),
  name: string,
): ProcessChildOptions {
  return {
    name,
    env: () => ({ ...meshEnv(ctx), ...(typeof env === "function" ? env() : env), ...meshEnv(ctx, false) }),
    onStdout: output,
    onStderr: output,
    ready: (line) => line === READY_LINE,
    readyTimeoutMs: 15_000,
  };
}

/** The mesh-wide settings members get in their environment, and the variables hidden from them. */
export interface MeshSettings {
  token: string | undefined;
  events: boolean;
  scheduler: string;
  hidden: string[];
  nats?: MeshNatsSettings | undefined;
  socketGroup?: number | undefined;
}

/**
 * The environment changes every member of the mesh gets: the mesh-wide settings, the `hidden`
 * variables removed and the allocatorDefaults() added beneath the member's own variables
 * (unless `hiding` is false: the settings alone, which override whatever a member's own
 * variables say).
 */
export function meshEnv(ctx: MeshSettings, hiding = true): Record<string, string | undefined> {
  return {
    ...(hiding && Object.fromEntries(ctx.hidden.map((name) => [name, undefined]))),
    // Defaults a member's own variables (or this process's) may override.
    ...(hiding && allocatorDefaults()),
    ...(ctx.token !== undefined && { HERMES_MESH_TOKEN: ctx.token }),
    ...(ctx.nats && { HERMES_NATS: JSON.stringify(ctx.nats) }),
    ...(!ctx.events && { HERMES_EVENTS: "0" }),
    HERMES_SCHEDULER: ctx.scheduler,
    // The gid the member's sockets are for; never one inherited from this process's environment.
    [SOCKET_GROUP_ENV]: ctx.socketGroup?.toString(),
  };
}

/**
 * How often, at most, Bun's allocator (mimalloc 3) may hand the free memory inside pages still
 * in use back to the system when its thread goes idle. Its default, 100 ms, means a member
 * answering requests one by one (idle between each) has memory taken away every 100 ms and
 * page-faults it back on the next messages: on the machines measured that was up to about a
 * third of a client-to-actor round trip (docs/benchmarks.md, "The allocator's idle purge").
 * At 2 s the round trip keeps its memory while busy, and an idle member still returns it
 * within about 2 s. Deno ignores the variable.
 */
export const ALLOCATOR_IDLE_PURGE = { MIMALLOC_PURGE_HOLES_MIN_INTERVAL: "2000" } as const;

/**
 * ALLOCATOR_IDLE_PURGE, for the variables this process's environment does not set already
 * (a value given there is passed on as it is).
 *
 * @example
 * Bun.spawn(cmd, { env: { ...process.env, ...allocatorDefaults() } });
 */
export function allocatorDefaults(env: Record<string, string | undefined> = process.env): Record<string, string> {
  return Object.fromEntries(Object.entries(ALLOCATOR_IDLE_PURGE).filter(([name]) => env[name] === undefined));
}
