import { mkdirSync, readdirSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { ControlServer, newSpawnSecret } from "../../mesh/control-server.ts";
import { actorAddress, actorSocketPath, clientsDir, controlSocketPath, meshInfoPath, type MeshInfo, type MeshNatsSettings } from "../../mesh/control-protocol.ts";
import { AccessMode, setAccess } from "../../mesh/socket-access.ts";
import { setSocketMode } from "../../mesh/socket-transport.ts";
import type { Registry, RegistryEntry } from "../../mesh/registry.ts";
import type { Logger } from "../../mesh/logger.ts";
import { stableAgentId } from "../../mesh/ids.ts";
import type { StartupReport } from "../actor/actor-host.ts";
import type { ChildHandle, ChildSpec as SupervisedChild, StartupTimings } from "./child-spec.ts";
import { isActorSpec, type ActorSpec, type MeshFile, type SupervisorSpec } from "./mesh-file.ts";
import { EventLog } from "../observability/event-log.ts";
import { actorHostEntry, HOST_SOURCE } from "./actor-host-bundle.ts";
import { requireBun } from "./bun-runtime.ts";
import { THIS_RUNTIME } from "./runtime-binary.ts";
import { denoHostCommand, requireDeno } from "./deno-runtime.ts";
import { environment, processChild, type ProcessChildOptions } from "./process-child.ts";
import { setsStartUpVariable, StandbyHost } from "./standby-host.ts";
import { SupervisorRegistry } from "./supervisor-registry.ts";
import type { SupervisorEvent } from "./supervisor-events.ts";
import { supervisorChild } from "./supervisor-child.ts";
import { messageOf } from "./supervisor-errors.ts";
import { Supervisor } from "./supervisor.ts";
import { gatewayChild, gatewayFromFile, withFileAllowLists, type GatewayOptions } from "./gateway-child.ts";
import { meshEnv, memberProcess, READY_LINE } from "./member-process.ts";

export { READY_LINE, type GatewayOptions };

/** The line an actor host prints once its module is loaded, with its StartupReport as JSON. */
const LOADED_LINE = "hermes-mesh:loaded ";

/** What actor modules import (from source): a standby host loads it while it waits. */
const DEFINE_ACTOR = join(import.meta.dirname, "../actor/define-actor.ts");
/** How long after the tree is up, or a start took the standby actor host, the next one is spawned. */
const STANDBY_AFTER_RESTART_MS = 100;

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
  /**
   * Keep one actor host started ahead (standby-host.ts), so that a start or restart skips Bun's
   * start-up and the host's load; it costs one idle process. Default true, unless the
   * environment has HERMES_ACTOR_STANDBY=0. A supervisor on Deno has none (a standby is a Bun host).
   */
  standby?: boolean;
  /**
   * How late members may hear of a change while the tree starts: every change of that time
   * goes out at most this long after it, all the rest once the tree is up. Default
   * TREE_START_HOLD_MS (500); 0 sends each tick's changes at once.
   */
  startUpdateHoldMs?: number;
}

/** The default socket directory of a mesh. */
export function defaultMeshDir(meshFile: MeshFile): string {
  return meshFile.mesh.dir ?? join(tmpdir(), `hermes-mesh-${meshFile.mesh.name}`);
}

/**
 * How late members may hear of a change while the tree starts (docs/actors.md, "What the mesh
 * hears of a start"): the starts come about 100 ms apart on a slow box, and each one announced
 * at once woke every member before it. A sender's link to a sibling still starting tries it
 * again on its own backoff, which reaches 500 ms too.
 */
export const TREE_START_HOLD_MS = 500;

/**
 * How long an actor may send no heartbeat before it is found hung and killed, unless the mesh
 * file says (`mesh.hung_after_ms`, at least two intervals; this default, at least three). A busy
 * actor's event loop can stall for seconds without being hung: a synchronous loop of sends on a
 * slow box whose cores other members share (the fan-out bench's publisher, 16 subscribers on one
 * core, stalled 2.5 s and was killed at three missed 1 s heartbeats).
 */
export const HUNG_AFTER_MS = 10_000;

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
  const socketGroup = meshFile.mesh.socket_group;
  prepareMeshDir(dir, socketGroup);
  const name = meshFile.mesh.name;
  const token = meshFile.mesh.token_env ? process.env[meshFile.mesh.token_env] : undefined;
  if (meshFile.mesh.token_env && !token) {
    throw new Error(`mesh.token_env names ${meshFile.mesh.token_env}, which is not set in the environment`);
  }
  const pending = new Map<string, PendingStart>();
  // An actor start is done when the control server marks it healthy (its ready, after init):
  // the supervisor goes on to the next child at once, without waiting for the ready line the
  // actor prints after the answer. Registration is noted for the start's timings.
  const registry = new SupervisorRegistry((update) => {
    const start = update.type === "patch" ? pending.get(update.address) : undefined;
    if (!start || update.type !== "patch") return;
    if ("capabilities" in update.changes) start.registeredAt ??= epochNow();
    if (update.changes.health !== "healthy") return;
    start.readyAt = epochNow();
    start.ready.resolve();
  });
  const spawned = new Map<string, ChildHandle>();
  const nats = natsSettingsOf(meshFile);
  const hostEntry = await actorHostEntry(options.log, { nats: nats !== undefined });
  // The gateway's token is the gateway's alone: actors do not inherit it from this process.
  const gatewayTokenEnv = meshFile.gateway?.token_env;
  const actorHidden = ["HERMES_GATEWAY_TOKEN", ...(gatewayTokenEnv ? [gatewayTokenEnv] : [])];
  const gatewayHidden = gatewayTokenEnv && gatewayTokenEnv !== "HERMES_GATEWAY_TOKEN" ? [gatewayTokenEnv] : [];
  const members = { token, events: meshFile.mesh.events, scheduler: meshFile.mesh.scheduler, nats, socketGroup };
  const standby = THIS_RUNTIME === "bun" && (options.standby ?? process.env.HERMES_ACTOR_STANDBY !== "0")
    ? new StandbyHost([process.execPath, hostEntry], environment(meshEnv({ ...members, hidden: actorHidden })), options.log, { preload: [DEFINE_ACTOR], dir })
    : undefined;
  const control = await ControlServer.start({
    dir,
    meshName: name,
    registry,
    heartbeatMs: meshFile.mesh.heartbeat_ms,
    hungAfterMs: meshFile.mesh.hung_after_ms ?? Math.max(HUNG_AFTER_MS, 3 * meshFile.mesh.heartbeat_ms),
    log: options.log,
    ...(token !== undefined && { token }),
    onHung: (address) => {
      // Killed like a crash: the supervisor restarts it by its strategy. Only the process it
      // spawned is signalled, never a pid some message named.
      spawned.get(address)?.kill();
    },
  });
  // Over NATS the registry is shared with the other hosts' supervisors (src/supervisor/nats-registry.ts).
  let shared: Awaited<ReturnType<typeof shareRegistry>> | undefined;
  try {
    // Bound private by the control server: a mesh shared with a group opens it to the group.
    setSocketMode(controlSocketPath(dir), socketGroup);
    shared = nats ? await shareRegistry(nats, registry, options.log) : undefined;
  } catch (error) {
    await control.close();
    throw error;
  }
  // Restarts, exits and escalations go to the mesh's event logs too, next to the actors' own.
  const supervisorLog = meshFile.mesh.events ? new EventLog(join(dir, "logs", "supervisor.jsonl"), { actor: "supervisor" }) : undefined;
  const onEvent = (event: SupervisorEvent) => {
    // The pid is in the entry since the spawn: only a restart count that changed goes out (each
    // registry update is sent to every member, which made starting a large mesh slow).
    const entry = event.type === "started" ? registry.byAddress(event.child) : undefined;
    if (event.type === "started" && entry && (entry.pid !== event.pid || entry.restarts !== event.restarts)) {
      registry.patch(event.child, { pid: event.pid, restarts: event.restarts, updatedAt: Date.now() });
    }
    // A lone instance's down is held for its restart: one that will not come is told now (a
    // sibling stopped to be restarted with the crashed one, one_for_all, keeps its hold).
    if (event.type === "exited" && !event.willRestart) registry.noRestart(event.child);
    if (event.type === "stopped" && event.child !== undefined && event.reason !== "sibling_restart") registry.noRestart(event.child);
    if (supervisorLog && event.type !== "restarting") supervisorLog.write({ ...event, event: event.type === "started" && event.restarts > 0 ? "restart" : event.type });
    options.onEvent?.(event);
  };
  const firstStartsLeft = { count: 0 };
  const build = (spec: SupervisorSpec | MeshFile["supervisor"], id: string) => ({
    id,
    strategy: spec.strategy,
    intensity: spec.intensity,
    period: spec.period_ms,
    backoff: { initialMs: spec.backoff.initial_ms, maxMs: spec.backoff.max_ms, jitter: spec.backoff.jitter },
    children: spec.children.flatMap((child): SupervisedChild[] =>
      isActorSpec(child)
        ? instancesOf(child, { dir, name, registry, control, spawned, pending, standby, firstStartsLeft, options, hostEntry, ...members, hidden: actorHidden })
        : [supervisorChild({ ...build(child, child.supervisor), onEvent })],
    ),
  });
  const rootSpec = build(meshFile.supervisor, "root");
  const gatewayOptions = options.gateway === undefined ? gatewayFromFile(meshFile) : options.gateway && withFileAllowLists(options.gateway, meshFile);
  const gatewayAt: { url: string; socket: string } | undefined = gatewayOptions ? { url: "", socket: "" } : undefined;
  if (gatewayOptions) rootSpec.children.push(gatewayChild(gatewayOptions, { dir, name, ...members, onOutput: options.onOutput, at: gatewayAt!, hidden: gatewayHidden }));
  const info: MeshInfo = {
    name, token_env: meshFile.mesh.token_env ?? null, supervisor_pid: process.pid, started_at: Date.now(),
    ...(nats && { nats }), ...(socketGroup !== undefined && { socket_group: socketGroup }),
  };
  // The group's clients read it (token_env, nats, socket_group); a file left by a previous run keeps
  // its mode when rewritten, hence the explicit one.
  const infoMode = socketGroup === undefined ? AccessMode.PRIVATE_FILE : AccessMode.SHARED_FILE;
  writeFileSync(meshInfoPath(dir), `${JSON.stringify(info)}\n`, { mode: infoMode });
  setAccess(meshInfoPath(dir), infoMode, socketGroup);
  const root = new Supervisor(rootSpec);
  root.onEvent(onEvent);
  const ended = Promise.withResolvers<string>();
  root.onEvent((event) => {
    if (event.type === "stopped" && event.child === undefined) ended.resolve(event.reason);
  });
  const holdMs = options.startUpdateHoldMs ?? TREE_START_HOLD_MS;
  const releaseUpdates = holdMs > 0 ? control.holdUpdates(holdMs) : () => {};
  try {
    await root.start();
    releaseUpdates();
  } catch (error) {
    releaseUpdates();
    standby?.close();
    await shared?.close();
    await control.close();
    removeRunFiles(dir);
    throw error;
  }
  // As the tree starts, each Bun actor's first start that has another after it prepares the
  // spare the next one takes: that host's Bun start-up and code load run beside this start
  // (a 50-actor start about 0.8x as long on two cores), and a spare handed its start at once skips
  // the rehearsal (host-main.ts). Once the tree is up the spare is for restarts: made a little
  // after each restart that took it, and here if the tree's last start left none.
  if (standby) setTimeout(() => standby.prepare(), STANDBY_AFTER_RESTART_MS);
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
        standby?.close();
        await root.stop();
        await shared?.close();
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
    dir: string; name: string; registry: SupervisorRegistry; control: ControlServer; spawned: Map<string, ChildHandle>; pending: Map<string, PendingStart>;
    standby: StandbyHost | undefined;
    /** Bun actor instances of the tree whose first start has not spawned yet. */
    firstStartsLeft: { count: number };
    token: string | undefined; options: StartMeshOptions; hostEntry: string; events: boolean; scheduler: string; hidden: string[];
    nats: MeshNatsSettings | undefined; socketGroup: number | undefined;
  },
): SupervisedChild[] {
  // A pool's external instances (`external: n`) come after the supervised ones: their entries
  // wait, down, for an external member to register as them (docs/actors.md, "External members").
  for (let instance = spec.pool; instance < poolSize(spec); instance++) {
    ctx.registry.upsert({ ...registryEntry(spec, instance, ctx.dir, ctx.name, ctx.nats), health: "down", external: true });
  }
  // Only instances a spare can become count: a spare left waiting would rehearse beside the starts.
  const takesSpare = spec.runtime !== "deno" && ctx.standby !== undefined && !setsStartUpVariable(spec.env ?? {});
  if (takesSpare) ctx.firstStartsLeft.count += spec.pool;
  return Array.from({ length: spec.pool }, (_, instance) => {
    const address = actorAddress(spec.actor, instance, poolSize(spec));
    ctx.registry.upsert(registryEntry(spec, instance, ctx.dir, ctx.name, ctx.nats));
    if (spec.restart !== "temporary") ctx.registry.restartsOf(address);
    // A Deno actor runs the host's source with its own permissions; a Bun actor the bundle (the
    // source under a Deno supervisor, with the Bun binary it found).
    const host = spec.runtime === "deno"
      ? denoHostCommand(requireDeno(`actor ${spec.actor}`), HOST_SOURCE, ctx.dir, spec.deno_permissions)
      : [requireBun(`actor ${spec.actor}`), ctx.hostEntry];
    const cmd = [
      ...host,
      "--module", spec.module, "--name", spec.actor, "--instance", String(instance), "--pool", String(poolSize(spec)), "--dir", ctx.dir,
      ...(spec.concurrency !== undefined ? ["--concurrency", String(spec.concurrency)] : []),
      ...(spec.window !== undefined ? ["--window", String(spec.window)] : []),
      ...(typeof spec.shutdown_ms === "number" ? ["--shutdown-ms", String(spec.shutdown_ms)] : []),
    ];
    const output = (line: string) => {
      const start = ctx.pending.get(address);
      if (start) start.said = true;
      if (line.startsWith(LOADED_LINE)) {
        if (start) start.report = parseStartupReport(line);
      } else if (line !== READY_LINE) {
        ctx.options.onOutput?.(address, line);
      }
    };
    // Each start hands the child a new one-time secret: only it can register as this address.
    const env = () => {
      const secret = newSpawnSecret();
      ctx.control.expectSpawn(address, secret);
      return { ...spec.env, ...(spec.durable && { HERMES_ACTOR_DURABLE: "1" }), HERMES_SPAWN_SECRET: secret };
    };
    // "starting" with the pid, and for a restart the count it will have once up: a pool
    // instance's restart is announced at once, a first start and a lone instance's restart with
    // their "healthy" (supervisor-registry.ts), so that nothing is left to announce after it.
    const onSpawn = (pid: number) => {
      const start = ctx.pending.get(address);
      if (start) start.spawnedAt ??= epochNow();
      ctx.registry.patch(address, { health: "starting", pid, ...(starts > 0 && { restarts: starts }), updatedAt: Date.now() });
    };
    const readyWhen = () => ctx.pending.get(address)?.ready.promise ?? new Promise<void>(() => {});
    const processOptions: ProcessChildOptions = { ...memberProcess(ctx, output, env, `actor ${address}`), onSpawn, readyWhen };
    const spawnFresh = processChild(cmd, processOptions);
    // A standby is a Bun host: Deno actors always start fresh.
    const standby = spec.runtime === "deno" ? undefined : ctx.standby;
    const viaStandby = standby && processChild(cmd, {
      ...processOptions,
      spawn: (command, options) => {
        // Timed before the hand-over: the spare may read its start before take() returns.
        const handedAt = epochNow();
        const handed = standby.take(command, options);
        const start = ctx.pending.get(address)!;
        if (handed) [start.standby, start.spawnedAt] = [true, handedAt];
        // As the tree starts, the next child's host loads while this one starts (see startMesh).
        // It is spawned once this synchronous step is over, since a spawn blocks this process for
        // a few ms and this start's spawned step should not wait for it.
        if (takesSpare && starts === 0 && !firstSpawned) {
          firstSpawned = true;
          if (--ctx.firstStartsLeft.count > 0) setImmediate(() => standby.prepare());
        }
        return handed;
      },
    });
    let firstSpawned = false;
    /** One attempt: the start's record is kept for its timings, and for telling what failed. */
    const attempt = async (how: () => Promise<ChildHandle>, start: PendingStart): Promise<ChildHandle> => {
      ctx.pending.set(address, start);
      try {
        return await how();
      } finally {
        ctx.pending.delete(address);
      }
    };
    // The next spare comes a little after the start that took one: spawning blocks this process
    // for a few ms, which the restarted actor's first answers (and clients here) would feel.
    const prepareStandby = (start: PendingStart) => {
      if (standby && start.standby) setTimeout(() => standby.prepare(), STANDBY_AFTER_RESTART_MS);
    };
    /** Successful starts so far: a restart's count once it is up, as the supervisor counts it. */
    let starts = 0;
    return {
      id: address,
      restart: spec.restart,
      shutdown: spec.shutdown_ms,
      start: async () => {
        let start = newPendingStart();
        let handle: ChildHandle;
        try {
          try {
            handle = await attempt(viaStandby ?? spawnFresh, start);
          } catch (error) {
            // A spare that went away before it said a word (killed while it waited, say) did not
            // fail as this actor: the start is spawned as usual rather than counted as a crash.
            if (!start.standby || start.said) throw error;
            ctx.options.log.warn("standby actor host gone before it took the start: spawning the actor", { actor: address, error: messageOf(error) });
            start = newPendingStart();
            handle = await attempt(spawnFresh, start);
          }
        } catch (error) {
          prepareStandby(start);
          // A first start's failure goes up the tree to whoever started the mesh, who reports
          // it; a failed restart is only recorded by the supervisor, so it is logged here.
          if (starts > 0) ctx.options.log.error("actor failed to restart", { actor: address, error: messageOf(error) });
          // Spawned but never ready: that process is gone (processChild killed it).
          if (start.spawnedAt !== undefined && ctx.registry.byAddress(address)?.pid !== undefined) ctx.registry.patch(address, { pid: undefined, updatedAt: Date.now() });
          throw error;
        }
        starts++;
        prepareStandby(start);
        const started: ChildHandle = { ...handle, startup: startupTimings(start) };
        ctx.spawned.set(address, started);
        started.exited.then(() => {
          if (ctx.spawned.get(address) === started) ctx.spawned.delete(address);
          ctx.registry.patch(address, { health: "down", pid: undefined, queueDepth: 0, inFlight: 0, updatedAt: Date.now() });
        });
        return started;
      },
    };
  });
}

/** Now as epoch ms with the monotonic clock's precision, comparable with another process's. */
function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** One actor start under way: what it reported and when each step was seen (epoch ms). */
interface PendingStart {
  calledAt: number;
  /** Handed to the standby host. */
  standby?: boolean;
  /** The process printed something. */
  said?: boolean;
  spawnedAt?: number;
  report?: StartupReport;
  registeredAt?: number;
  readyAt?: number;
  ready: PromiseWithResolvers<void>;
}

function newPendingStart(): PendingStart {
  return { calledAt: epochNow(), ready: Promise.withResolvers<void>() };
}

/**
 * The StartupTimings of one actor start, in ms after it was called: spawned and, from the
 * host's loaded line, loaded (or a standby's assignment read) and imported; registered and
 * ready as the registry saw them.
 */
function startupTimings(start: PendingStart): StartupTimings {
  const since = (at: number) => Math.round((at - start.calledAt) * 10) / 10;
  const steps: Record<string, number> = {};
  if (start.spawnedAt !== undefined) steps.spawned = since(start.spawnedAt);
  const report = start.report;
  if (report) {
    // A standby loaded its code before this start: what counts is when it read its assignment.
    steps.loaded = since(report.origin + (report.assigned ?? report.loaded));
    steps.imported = since(report.origin + report.imported);
    if (report.assigned !== undefined) steps.standby = 1;
  }
  if (start.registeredAt !== undefined) steps.registered = since(start.registeredAt);
  if (start.readyAt !== undefined) steps.ready = since(start.readyAt);
  return steps;
}

function parseStartupReport(line: string): StartupReport | undefined {
  try {
    const report = JSON.parse(line.slice(LOADED_LINE.length)) as StartupReport;
    return typeof report?.origin === "number" && typeof report.loaded === "number" && typeof report.imported === "number" ? report : undefined;
  } catch {
    return undefined;
  }
}

function registryEntry(spec: ActorSpec, instance: number, dir: string, meshName: string, nats: MeshNatsSettings | undefined): RegistryEntry {
  const address = actorAddress(spec.actor, instance, poolSize(spec));
  return {
    name: spec.actor,
    instance,
    address,
    id: stableAgentId(address, meshName, nats?.host ?? hostname()),
    // Over NATS an instance is reached at its address's subject, from any host (docs/nats.md).
    socket: nats ? `nats:${address}` : actorSocketPath(dir, spec.actor, instance, poolSize(spec)),
    ...(nats && { host: nats.host }),
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

/**
 * Creates the mesh directory (0700, as it always was) and, for a mesh shared with a group, gives
 * it and its `clients/`, `logs/` and `data/` directories that group and their shared modes (mesh/socket-access.ts). A
 * group this user is not in fails here, saying so.
 */
function prepareMeshDir(dir: string, socketGroup: number | undefined): void {
  mkdirSync(dir, { recursive: true, mode: AccessMode.PRIVATE_DIR });
  if (socketGroup === undefined) return;
  setAccess(dir, AccessMode.SHARED_DIR, socketGroup);
  // Made here rather than by the first member to use them, which may be another user: where
  // members of the group listen (clients/), write their event logs and keep their durable stores.
  for (const shared of [clientsDir(dir), join(dir, "logs"), join(dir, "data")]) {
    mkdirSync(shared, { recursive: true, mode: AccessMode.PRIVATE_DIR });
    setAccess(shared, AccessMode.SHARED_MEMBER_DIR, socketGroup);
  }
}

/** Instances of a pool, supervised and external. */
function poolSize(spec: ActorSpec): number {
  return spec.pool + spec.external;
}

/** Connects to the mesh's NATS servers and shares the registry there; loaded only for a mesh over NATS. */
async function shareRegistry(nats: MeshNatsSettings, registry: SupervisorRegistry, log: Logger): Promise<{ close(): Promise<void> }> {
  const { connectNats } = await import("../../mesh/nats-transport.ts");
  const { startNatsRegistry } = await import("../../mesh/nats-registry.ts");
  const connection = await connectNats(nats, `hermes-mesh supervisor ${nats.host}`);
  try {
    const bridge = await startNatsRegistry({ connection, mesh: nats.mesh, host: nats.host, registry, replicas: nats.replicas, log });
    return {
      async close() {
        await bridge.close();
        await connection.drain().catch(() => {});
      },
    };
  } catch (error) {
    await connection.close().catch(() => {});
    throw error;
  }
}

/** The NATS settings members get, when the mesh runs over NATS (mesh.transport: nats). */
function natsSettingsOf(meshFile: MeshFile): MeshNatsSettings | undefined {
  const n = meshFile.mesh.nats;
  if (meshFile.mesh.transport !== "nats" || !n) return undefined;
  return {
    servers: n.servers, mesh: meshFile.mesh.name, host: n.host ?? hostname(), replicas: n.replicas,
    ...(n.user_env && { user_env: n.user_env }), ...(n.pass_env && { pass_env: n.pass_env }), ...(n.token_env && { token_env: n.token_env }), ...(n.tls && { tls: n.tls }),
    ...(n.dead_letters_kept !== undefined && { dead_letters_kept: n.dead_letters_kept }),
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
