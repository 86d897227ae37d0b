import { mkdirSync, readdirSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { ControlServer, newSpawnSecret } from "../../mesh/control-server.ts";
import { actorAddress, actorSocketPath, meshInfoPath, type MeshInfo } from "../../mesh/control-protocol.ts";
import { type RegistryEntry, Registry } from "../../mesh/registry.ts";
import type { Logger } from "../../mesh/logger.ts";
import { stableAgentId } from "../../mesh/ids.ts";
import type { ChildHandle, ChildSpec as SupervisedChild } from "./child-spec.ts";
import { isActorSpec, type ActorSpec, type MeshFile, type SupervisorSpec } from "./mesh-file.ts";
import { EventLog } from "../observability/event-log.ts";
import { actorHostEntry } from "./actor-host-bundle.ts";
import { processChild, type ProcessChildOptions } from "./process-child.ts";
import type { SupervisorEvent } from "./supervisor-events.ts";
import { supervisorChild } from "./supervisor-child.ts";
import { messageOf } from "./supervisor-errors.ts";
import { Supervisor } from "./supervisor.ts";

/** The line an actor process prints once it is listening, initialised and registered. */
export const READY_LINE = "hermes-mesh:ready";

/** A mesh started from a mesh file. */
export interface RunningMesh {
  name: string;
  dir: string;
  registry: Registry;
  root: Supervisor;
  /** Stops every actor (reverse start order), the control plane, and removes the sockets. */
  stop(): Promise<void>;
  /** Resolves when the root supervisor ends: "shutdown" after stop(), or the reason it gave up. */
  ended: Promise<string>;
  /** Where the gateway listens (current after its restarts), when the mesh runs one. */
  gateway?: { url: string; socket: string };
}

/** How startMesh runs a mesh file: where its sockets go, the gateway, logging and event hooks. */
export interface StartMeshOptions {
  /** Socket directory; default: the mesh file's `dir`, else `<tmp>/hermes-mesh-<name>`. */
  dir?: string;
  log: Logger;
  /** Every supervisor event, e.g. for printing restarts. */
  onEvent?: (event: SupervisorEvent) => void;
  /** Each line an actor prints (stdout or stderr), with its address. */
  onOutput?: (address: string, line: string) => void;
  /**
   * The HTTP gateway, supervised as the root's last child: overrides the mesh file's `gateway`
   * section; `false` runs none. Port 0 picks a free port (see RunningMesh.gateway).
   */
  gateway?: GatewayOptions | false;
}

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

/** The default socket directory of a mesh. */
export function defaultMeshDir(meshFile: MeshFile): string {
  return meshFile.mesh.dir ?? join(tmpdir(), `hermes-mesh-${meshFile.mesh.name}`);
}

/**
 * Starts a mesh: the registry and control socket, then the supervisor tree of the mesh file,
 * each actor instance its own process, started in order (each ready before the next starts).
 *
 * @example
 * const mesh = await startMesh(loadMeshFile("actors/mesh.yaml"), { log });
 * ...; await mesh.stop();
 */
export async function startMesh(meshFile: MeshFile, options: StartMeshOptions): Promise<RunningMesh> {
  const dir = options.dir ?? defaultMeshDir(meshFile);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = meshFile.mesh.name;
  const token = meshFile.mesh.token_env ? process.env[meshFile.mesh.token_env] : undefined;
  if (meshFile.mesh.token_env && !token) {
    throw new Error(`mesh.token_env names ${meshFile.mesh.token_env}, which is not set in the environment`);
  }
  const registry = new Registry();
  const spawned = new Map<string, ChildHandle>();
  const hostEntry = await actorHostEntry(options.log);
  const control = await ControlServer.start({
    dir,
    meshName: name,
    registry,
    heartbeatMs: meshFile.mesh.heartbeat_ms,
    log: options.log,
    ...(token !== undefined && { token }),
    onHung: (address) => {
      // Killed like a crash: the supervisor restarts it by its strategy. Only the process it
      // spawned is signalled, never a pid some message named.
      spawned.get(address)?.kill();
    },
  });
  // Restarts, exits and escalations go to the mesh's event logs too, next to the actors' own.
  const supervisorLog = meshFile.mesh.events ? new EventLog(join(dir, "logs", "supervisor.jsonl"), { actor: "supervisor" }) : undefined;
  const onEvent = (event: SupervisorEvent) => {
    if (event.type === "started" && event.child && registry.byAddress(event.child)) {
      registry.patch(event.child, { pid: event.pid, restarts: event.restarts, updatedAt: Date.now() });
    }
    if (supervisorLog && event.type !== "restarting") supervisorLog.write({ ...event, event: event.type === "started" && event.restarts > 0 ? "restart" : event.type });
    options.onEvent?.(event);
  };
  // The gateway's token is the gateway's alone: actors do not inherit it from this process.
  const gatewayTokenEnv = meshFile.gateway?.token_env;
  const actorHidden = ["HERMES_GATEWAY_TOKEN", ...(gatewayTokenEnv ? [gatewayTokenEnv] : [])];
  const gatewayHidden = gatewayTokenEnv && gatewayTokenEnv !== "HERMES_GATEWAY_TOKEN" ? [gatewayTokenEnv] : [];
  const build = (spec: SupervisorSpec | MeshFile["supervisor"], id: string) => ({
    id,
    strategy: spec.strategy,
    intensity: spec.intensity,
    period: spec.period_ms,
    backoff: { initialMs: spec.backoff.initial_ms, maxMs: spec.backoff.max_ms, jitter: spec.backoff.jitter },
    children: spec.children.flatMap((child): SupervisedChild[] =>
      isActorSpec(child)
        ? instancesOf(child, { dir, name, registry, control, spawned, token, options, hostEntry, events: meshFile.mesh.events, scheduler: meshFile.mesh.scheduler, hidden: actorHidden })
        : [supervisorChild({ ...build(child, child.supervisor), onEvent })],
    ),
  });
  const rootSpec = build(meshFile.supervisor, "root");
  const gatewayOptions = options.gateway === undefined ? gatewayFromFile(meshFile) : options.gateway && withFileAllowLists(options.gateway, meshFile);
  const gatewayAt: { url: string; socket: string } | undefined = gatewayOptions ? { url: "", socket: "" } : undefined;
  if (gatewayOptions) rootSpec.children.push(gatewayChild(gatewayOptions, { dir, name, token, events: meshFile.mesh.events, scheduler: meshFile.mesh.scheduler, options, at: gatewayAt!, hidden: gatewayHidden }));
  const info: MeshInfo = { name, token_env: meshFile.mesh.token_env ?? null, supervisor_pid: process.pid, started_at: Date.now() };
  writeFileSync(meshInfoPath(dir), `${JSON.stringify(info)}\n`, { mode: 0o600 });
  const root = new Supervisor(rootSpec);
  root.onEvent(onEvent);
  const ended = Promise.withResolvers<string>();
  root.onEvent((event) => {
    if (event.type === "stopped" && event.child === undefined) ended.resolve(event.reason);
  });
  try {
    await root.start();
  } catch (error) {
    await control.close();
    removeRunFiles(dir);
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    name,
    dir,
    registry,
    root,
    ended: ended.promise,
    ...(gatewayAt && { gateway: gatewayAt }),
    stop: () =>
      (stopping ??= (async () => {
        await root.stop();
        await control.close();
        await supervisorLog?.close();
        removeRunFiles(dir);
      })()),
  };
}

/** One supervised child per pool instance, each registered as "starting" until it reports ready. */
function instancesOf(
  spec: ActorSpec,
  ctx: {
    dir: string; name: string; registry: Registry; control: ControlServer; spawned: Map<string, ChildHandle>;
    token: string | undefined; options: StartMeshOptions; hostEntry: string; events: boolean; scheduler: string; hidden: string[];
  },
): SupervisedChild[] {
  return Array.from({ length: spec.pool }, (_, instance) => {
    const address = actorAddress(spec.actor, instance, spec.pool);
    ctx.registry.upsert(registryEntry(spec, instance, ctx.dir, ctx.name));
    const cmd = [
      process.execPath, ctx.hostEntry,
      "--module", spec.module, "--name", spec.actor, "--instance", String(instance), "--pool", String(spec.pool), "--dir", ctx.dir,
      ...(spec.concurrency !== undefined ? ["--concurrency", String(spec.concurrency)] : []),
      ...(spec.window !== undefined ? ["--window", String(spec.window)] : []),
      ...(typeof spec.shutdown_ms === "number" ? ["--shutdown-ms", String(spec.shutdown_ms)] : []),
    ];
    const output = (line: string) => (line === READY_LINE ? undefined : ctx.options.onOutput?.(address, line));
    // Each start hands the child a new one-time secret: only it can register as this address.
    const env = () => {
      const secret = newSpawnSecret();
      ctx.control.expectSpawn(address, secret);
      return { ...spec.env, ...(spec.durable && { HERMES_ACTOR_DURABLE: "1" }), HERMES_SPAWN_SECRET: secret };
    };
    const start = processChild(cmd, memberProcess(ctx, output, env, `actor ${address}`));
    let startedBefore = false;
    return {
      id: address,
      restart: spec.restart,
      shutdown: spec.shutdown_ms,
      start: async () => {
        ctx.registry.patch(address, { health: "starting", updatedAt: Date.now() });
        let handle;
        try {
          handle = await start();
        } catch (error) {
          // A first start's failure goes up the tree to whoever started the mesh, who reports
          // it; a failed restart is only recorded by the supervisor, so it is logged here.
          if (startedBefore) ctx.options.log.error("actor failed to restart", { actor: address, error: messageOf(error) });
          throw error;
        }
        startedBefore = true;
        ctx.spawned.set(address, handle);
        ctx.registry.patch(address, { pid: handle.pid, updatedAt: Date.now() });
        handle.exited.then(() => {
          if (ctx.spawned.get(address) === handle) ctx.spawned.delete(address);
          ctx.registry.patch(address, { health: "down", pid: undefined, queueDepth: 0, inFlight: 0, updatedAt: Date.now() });
        });
        return handle;
      },
    };
  });
}

function registryEntry(spec: ActorSpec, instance: number, dir: string, meshName: string): RegistryEntry {
  const address = actorAddress(spec.actor, instance, spec.pool);
  return {
    name: spec.actor,
    instance,
    address,
    id: stableAgentId(address, meshName, hostname()),
    socket: actorSocketPath(dir, spec.actor, instance, spec.pool),
    capabilities: [...spec.capabilities],
    subscriptions: [...spec.subscribe],
    health: "starting",
    kind: "actor",
    restarts: 0,
    queueDepth: 0,
    inFlight: 0,
    updatedAt: Date.now(),
  };
}

const GATEWAY_MAIN = join(import.meta.dir, "../gateway/gateway-main.ts");
const GATEWAY_LINE = "hermes-mesh:gateway ";

function gatewayFromFile(meshFile: MeshFile): GatewayOptions | undefined {
  const g = meshFile.gateway;
  if (!g) return undefined;
  const token = g.token_env ? process.env[g.token_env] : undefined;
  if (g.token_env && !token) throw new Error(`gateway.token_env names ${g.token_env}, which is not set in the environment`);
  return { port: g.port, host: g.host, bodyLimitBytes: g.body_limit_bytes, allowedHosts: g.allowed_hosts, allowedOrigins: g.allowed_origins, ...(token !== undefined && { token }) };
}

/** Options given in code (e.g. by `hermes-mesh up`) keep the mesh file's allow-lists unless they set their own. */
function withFileAllowLists(gateway: GatewayOptions, meshFile: MeshFile): GatewayOptions {
  return { ...gateway, allowedHosts: gateway.allowedHosts ?? meshFile.gateway?.allowed_hosts ?? [], allowedOrigins: gateway.allowedOrigins ?? meshFile.gateway?.allowed_origins ?? [] };
}

/** The gateway as a supervised child: its own process, restarted like an actor. */
function gatewayChild(
  gateway: GatewayOptions,
  ctx: { dir: string; name: string; token: string | undefined; events: boolean; scheduler: string; options: StartMeshOptions; at: { url: string; socket: string }; hidden: string[] },
): SupervisedChild {
  const cmd = [
    process.execPath, GATEWAY_MAIN, "--dir", ctx.dir, "--mesh", ctx.name,
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
      ctx.options.onOutput?.("gateway", line);
    }
  };
  return {
    id: "gateway",
    shutdown: 5000,
    start: processChild(cmd, memberProcess(ctx, output, gateway.token !== undefined ? { HERMES_GATEWAY_TOKEN: gateway.token } : {}, "gateway")),
  };
}

/**
 * How a mesh member process is started: the mesh-wide settings in its environment, without the
 * `hidden` variables of this process (the gateway's token), its output to `output`, started
 * only once it prints the ready line, and called `name` in errors.
 */
function memberProcess(
  ctx: { token: string | undefined; events: boolean; scheduler: string; hidden: string[] },
  output: (line: string) => void,
  env: Record<string, string> | (() => Record<string, string>),
  name: string,
): ProcessChildOptions {
  return {
    name,
    env: () => ({
      ...Object.fromEntries(ctx.hidden.map((name) => [name, undefined])),
      ...(typeof env === "function" ? env() : env),
      ...(ctx.token !== undefined && { HERMES_MESH_TOKEN: ctx.token }),
      ...(!ctx.events && { HERMES_EVENTS: "0" }),
      HERMES_SCHEDULER: ctx.scheduler,
    }),
    onStdout: output,
    onStderr: output,
    ready: (line) => line === READY_LINE,
    readyTimeoutMs: 15_000,
  };
}

/** Socket files of killed actors stay behind; a stopped mesh leaves none, nor its mesh.json. */
function removeRunFiles(dir: string): void {
  for (const file of readdirSync(dir)) {
    if (file.endsWith(".sock") || file === "mesh.json") {
      try {
        unlinkSync(join(dir, file));
      } catch {
        // Gone already.
      }
    }
  }
}
