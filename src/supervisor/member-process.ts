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
 * variables removed and the runtimeDefaults() added beneath the member's own variables
 * (unless `hiding` is false: the settings alone, which override whatever a member's own
 * variables say).
 */
export function meshEnv(ctx: MeshSettings, hiding = true): Record<string, string | undefined> {
  return {
    ...(hiding && Object.fromEntries(ctx.hidden.map((name) => [name, undefined]))),
    // Defaults a member's own variables (or this process's) may override.
    ...(hiding && runtimeDefaults()),
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
 * How many times JavaScriptCore runs a function before it compiles it: 2,000 for its baseline
 * JIT and 10,000 for its optimising one (its own defaults are 500 and 1,000). A member runs much
 * of its code only a few hundred or thousand times: its start, each registry update, a message
 * now and then. With the defaults it compiled that code on its compiler thread, and on two cores
 * that CPU came out of the start of the next member and of the busy ones' messages. Measured
 * (docs/benchmarks.md, "When members compile their code"): a 50-actor start in about a fifth
 * less time with about a third less CPU, a sporadic message at about 0.6 of its CPU, kill -9
 * to the next answer a few ms sooner, and no steady path slower (code run that often is compiled
 * anyway, a few ms later). Deno ignores the variables.
 */
export const JIT_WARM_UP = { BUN_JSC_thresholdForJITAfterWarmUp: "2000", BUN_JSC_thresholdForOptimizeAfterWarmUp: "10000" } as const;

/** The runtime settings every member starts with, unless its environment gives its own. */
export const MEMBER_RUNTIME_DEFAULTS = { ...ALLOCATOR_IDLE_PURGE, ...JIT_WARM_UP } as const;

/**
 * MEMBER_RUNTIME_DEFAULTS, for the variables this process's environment does not set already
 * (a value given there is passed on as it is).
 *
 * @example
 * Bun.spawn(cmd, { env: { ...process.env, ...runtimeDefaults() } });
 */
export function runtimeDefaults(env: Record<string, string | undefined> = process.env): Record<string, string> {
  return Object.fromEntries(Object.entries(MEMBER_RUNTIME_DEFAULTS).filter(([name]) => env[name] === undefined));
}
