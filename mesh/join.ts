/**
 * Joining a running mesh: the one way every member gets in, whether it is an actor instance the
 * supervisor spawned or a program from outside the tree (connectMesh, the gateway, the
 * workflow orchestrator's link). Connect to the supervisor's control socket, introduce
 * yourself, keep a local copy of the registry current, start a mesh node that routes from that
 * copy, and follow the supervisor's news so that links redial a peer the moment it is back.
 */
import { readFileSync } from "node:fs";
import { ControlClient } from "./control-client.ts";
import { clientSocketPath, meshInfoPath, type MeshInfo, type MeshNatsSettings } from "./control-protocol.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import { createLogger, type Logger } from "./logger.ts";
import { MeshNode, type MeshNodeOptions } from "./mesh-node.ts";
import { resolveDeadLetterLimits } from "./peer-link.ts";
import { Registry, type ActorHealth, type CapabilityInfo, type RegistryUpdate } from "./registry.ts";
import { schedulerPicker, schedulerFromEnv, type Scheduler } from "./routing.ts";
import type { MeshTransport } from "./transport.ts";

/** The load figures an actor reports in each heartbeat. */
export type HeartbeatLoad = Parameters<ControlClient["heartbeat"]>[0];

/** What every member sets, actor or client. */
export interface JoinBase extends Pick<MeshNodeOptions, "onRequest" | "onEvent" | "onSent" | "onDelivered" | "dedupe" | "window" | "maxAttempts" | "deadLetters"> {
  /** The mesh's socket directory (where `supervisor.sock` is). */
  dir: string;
  /**
   * This member's address: an actor's instance address (`echo`, `echo#1`), or a client's own
   * name, which must name no actor (the supervisor refuses it with code 2 otherwise).
   */
  address: string;
  /** The mesh token, when the mesh requires one (code 5 when it is wrong). */
  token?: string;
  /** Topic patterns this member receives events on. A client must `listen` to have any. */
  subscriptions?: readonly string[];
  /** Picks among instances and records outcomes. Default: the one HERMES_SCHEDULER names. */
  scheduler?: Scheduler;
  /** Where a failing heartbeat provider is reported. Default: standard error. */
  log?: Logger;
}

/** An actor instance the supervisor spawned: registers with its one-time secret and reports ready. */
export interface ActorJoin extends JoinBase {
  kind: "actor";
  /** The one-time registration secret it was spawned with (HERMES_SPAWN_SECRET); a wrong one is code 5. Unused when external. */
  spawnSecret: string;
  /**
   * An actor started outside the supervisor tree (`hermes-mesh actor`): it registers with the
   * mesh token instead, and `graceMs` after it goes the mesh forgets it (default: kept, down).
   */
  external?: { graceMs?: number };
  /** Capabilities its module declares, added to the mesh file's. */
  capabilities?: readonly string[];
  /** Descriptions and payload schemas of those capabilities (A2A skills, MCP tools at the gateway). */
  capabilityInfo?: Readonly<Record<string, CapabilityInfo>>;
  /**
   * Runs once the node listens and before the supervisor hears "ready" (an actor's `init`).
   * Messages arriving meanwhile wait in the node's handlers; a throw fails the join.
   */
  init?: (node: MeshNode) => void | Promise<void>;
  /** The figures of each heartbeat, sent at the interval the supervisor asks for from ready on. */
  heartbeat?: () => HeartbeatLoad;
}

/** A program outside the supervisor tree. */
export interface ClientJoin extends JoinBase {
  kind?: "client";
  /**
   * Listen at `<dir>/clients/<address>.sock` (the only place the supervisor lets a client
   * listen), for events on its subscriptions and answers to a stable address. Default false:
   * a dial-only member, whose answers come back on the connections it opened.
   */
  listen?: boolean;
}

/** How to join: as a spawned actor instance, or as a client. */
export type JoinMeshOptions = ActorJoin | ClientJoin;

/** A member of the mesh: its node, its registry view, its control connection. */
export interface MeshMember extends AsyncDisposable {
  readonly address: string;
  readonly kind: "actor" | "client";
  /** Sends, receives and routes (from `registry`). */
  readonly node: MeshNode;
  /** The supervisor's registry as this member sees it, kept current. */
  readonly registry: Registry;
  /** The connection to the supervisor (subscribe, stats, ps). */
  readonly control: ControlClient;
  /** Where the node listens, when it does. */
  readonly socketPath: string | undefined;
  /** Resolves when the supervisor connection is gone (the supervisor stopped, or close()). */
  readonly closed: Promise<void>;
  /** Closes the node (unanswered requests fail with code 10), then the control connection. Idempotent. */
  close(): Promise<void>;
}

/**
 * Joins the mesh running in `options.dir`. In order: connects to the supervisor's control
 * socket (code 10 when no mesh runs there, 5 for a wrong token); an actor registers with its
 * spawn secret, a client joins under its address; the registry snapshot that comes back is
 * kept current by every later update; the node starts listening (an actor where its registry
 * entry says, a listening client at `<dir>/clients/<address>.sock`); an actor runs `init`,
 * reports ready and heartbeats from then on.
 *
 * Every member follows the registry the same way: an entry becoming healthy (a restarted
 * actor's patch, a rejoining client's upsert, a snapshot) makes the links holding envelopes
 * for it redial at once instead of waiting out their backoff; an entry removed (a client that
 * left) drops its link, dead-lettering what waited for it.
 *
 * On any failure part-way, whatever was opened (control connection, listener and its socket
 * file, node) is closed before the error, coded as it came, is rethrown.
 *
 * @example
 * const member = await joinMesh({ dir: "/tmp/hermes-mesh-demo", address: "reporter", listen: true });
 * const reply = await member.node.request({ target_agent: "echo" }, { text: "hi" }, { timeoutMs: 2000 });
 * await member.close();
 *
 * @example
 * // An actor process (see src/actor/actor-host.ts).
 * const member = await joinMesh({
 *   kind: "actor", dir, address: "echo#0", spawnSecret, capabilities: ["echo"],
 *   onRequest: (request) => request.respond(request.request.payload),
 *   heartbeat: () => ({ queue_depth: 0, in_flight: 0, handled: 0, dead_letters: 0 }),
 * });
 */
export async function joinMesh(options: JoinMeshOptions): Promise<MeshMember> {
  const { dir, address } = options;
  // Bad limits are refused before anything opens.
  if (options.deadLetters) resolveDeadLetterLimits(options.deadLetters);
  if (options.kind !== "actor" && !options.listen && (options.subscriptions?.length ?? 0) > 0) {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `client ${address} subscribes but does not listen: nothing could deliver its events`, {
      reason: "subscriptions without a socket",
      expected: "listen: true, or no subscriptions",
    });
  }
  const registry = new Registry();
  const scheduler = options.scheduler ?? schedulerFromEnv();
  const token = options.token !== undefined ? { token: options.token } : {};
  let node: MeshNode | undefined;
  // Updates arrive from the moment the control connection opens; until the node exists there
  // is no link to wake or drop.
  const unfollow = registry.onUpdate((update) => {
    if (node) follow(node, update);
  });
  let control: ControlClient;
  try {
    control = await ControlClient.connect({ dir, address, registry, ...token });
  } catch (error) {
    unfollow();
    throw error;
  }
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let socketPath: string | undefined;
  let transport: (MeshTransport & { close(): Promise<void> }) | undefined;
  try {
    // A mesh over NATS (docs/nats.md): members reach each other through its servers, loaded only then.
    const nats = natsSettingsOf(dir);
    let natsTransport: import("./nats-transport.ts").NatsMeshTransport | undefined;
    if (nats) transport = natsTransport = await (await import("./nats-transport.ts")).natsTransportFor(nats, address);
    let heartbeatMs = 0;
    if (options.kind === "actor") {
      // In a mesh shared with a group the mesh directory is 2750: a member of the group (another
      // user, another container) may not create its socket there, only in clients/ (3770, sticky).
      const socket = transport ? `nats:${address}` : meshInfoOf(dir)?.socket_group !== undefined ? clientSocketPath(dir, address) : undefined;
      const external = options.external && { ...options.external, ...(socket && { socket }) };
      ({ heartbeatMs } = await control.register(options.spawnSecret, {
        capabilities: options.capabilities ?? [],
        subscriptions: options.subscriptions ?? [],
        ...(options.capabilityInfo && { capability_info: { ...options.capabilityInfo } }),
        // A dedupe memory of its own (a durable store) outlives this process; the default one does not.
        durable: options.dedupe !== undefined,
      }, external));
      // The supervisor decides where each instance listens: peers dial what its entry says.
      socketPath = registry.byAddress(address)?.socket;
      if (!socketPath) throw new HermesError(ErrorCode.INTERNAL, `the registry gives ${address} no socket to listen on`);
      // Over NATS it also reads the shared queue of each capability it serves (the mesh file's included).
      natsTransport?.serveCapabilities(registry.byAddress(address)?.capabilities ?? []);
    } else if (options.listen) {
      socketPath = transport ? `nats:${address}` : clientSocketPath(dir, address);
    }
    node = await MeshNode.start({
      address,
      socketPath,
      routes: registry,
      pick: schedulerPicker(scheduler, (to) => node?.inFlightTo(to) ?? 0),
      onOutcome: (to, ok, latencyMs) => scheduler.record(to, { ok, latencyMs }),
      ...token,
      onRequest: options.onRequest,
      onEvent: options.onEvent,
      onSent: options.onSent,
      onDelivered: options.onDelivered,
      dedupe: options.dedupe,
      // The supervisor tells those who wait for an instance of its return first (control-server.ts).
      onAwaiting: (to) => control.awaiting(to),
      window: options.window,
      maxAttempts: options.maxAttempts,
      deadLetters: options.deadLetters,
      ...(transport && { transport }),
    });
    if (options.kind === "actor") {
      await options.init?.(node);
      await control.ready();
      const load = options.heartbeat;
      if (load) {
        const log = options.log ?? createLogger({ actor: address });
        heartbeat = setInterval(() => {
          try {
            control.heartbeat(load());
          } catch (error) {
            log.warn("heartbeat not sent: its figures could not be read", { error: String(error) });
          }
        }, heartbeatMs);
        // No heartbeat outlives the supervisor connection.
        void control.closed.then(() => clearInterval(heartbeat));
      }
    } else {
      await control.join(socketPath, options.subscriptions ?? []);
    }
  } catch (error) {
    unfollow();
    await node?.close().catch(() => {});
    await transport?.close().catch(() => {});
    await control.close().catch(() => {});
    throw error;
  }
  const joined = node;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      clearInterval(heartbeat);
      unfollow();
      try {
        await joined.close();
        await transport?.close();
      } finally {
        await control.close();
      }
    })());
  return {
    address,
    kind: options.kind ?? "client",
    node: joined,
    registry,
    control,
    socketPath,
    closed: control.closed,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * The NATS settings of the mesh in `dir` when it runs over NATS: HERMES_NATS for an actor the
 * supervisor spawned, else the mesh's mesh.json (a client, the gateway). Undefined otherwise.
 */
function natsSettingsOf(dir: string): MeshNatsSettings | undefined {
  if (process.env.HERMES_NATS) return JSON.parse(process.env.HERMES_NATS) as MeshNatsSettings;
  return meshInfoOf(dir)?.nats;
}

/** The mesh's mesh.json, or undefined when there is none or it cannot be read. */
function meshInfoOf(dir: string): MeshInfo | undefined {
  try {
    return JSON.parse(readFileSync(meshInfoPath(dir), "utf8")) as MeshInfo;
  } catch {
    return undefined;
  }
}

/**
 * How a node follows the supervisor's news. Healthy: links holding envelopes for that address
 * try now (they would otherwise wait out a backoff of up to half a second). Any other health:
 * what waits for that address may move to a healthy sibling (MeshNode.notifyAway). Removed: the
 * link and whatever still waits in it go, as dead letters.
 */
function follow(node: MeshNode, update: RegistryUpdate): void {
  switch (update.type) {
    case "upsert":
      healthNews(node, update.entry.address, update.entry.health);
      return;
    case "patch":
      if (update.changes.health !== undefined) healthNews(node, update.address, update.changes.health);
      return;
    case "snapshot":
      for (const entry of update.entries) healthNews(node, entry.address, entry.health);
      return;
    case "remove":
      node.forget(update.address);
      return;
  }
}

function healthNews(node: MeshNode, address: string, health: ActorHealth): void {
  if (health === "healthy") node.notifyUp(address);
  else node.notifyAway(address);
}

/** How a program joins a mesh over NATS JetStream with no supervisor of its own (docs/nats.md). */
export interface NatsJoinOptions extends Pick<JoinBase, "onEvent" | "scheduler" | "log" | "deadLetters"> {
  /** The mesh's servers and name (as its mesh file's `mesh.nats` says), and how to log in. */
  nats: Omit<MeshNatsSettings, "host" | "replicas"> & { replicas?: number };
  /** This client's address. */
  address: string;
}

/** A client joined through NATS: its node and registry view, and its subscriptions to publish. */
export interface NatsMember {
  readonly node: MeshNode;
  readonly registry: Registry;
  /** Replaces the topic patterns it receives events on (shared through the registry bucket). */
  subscribe(patterns: readonly string[]): void;
  close(): Promise<void>;
}

/**
 * Joins a mesh over NATS directly: the registry comes from the mesh's registry bucket (every
 * host's supervisor writes its members there), this client's own entry goes into it (so events
 * on its subscriptions reach it), and its node talks through the mesh's stream. Nothing is
 * loaded for it unless it is used. Rejects with code 10 naming the URLs when no server answers.
 *
 * @example
 * const member = await joinOverNats({ address: "report-1", nats: { servers: ["nats://10.0.0.5:4222"], mesh: "shop" } });
 * await member.node.request({ target_agent: "orders" }, { id: 7 }, { timeoutMs: 2000 });
 */
export async function joinOverNats(options: NatsJoinOptions): Promise<NatsMember> {
  const { address } = options;
  if (options.deadLetters) resolveDeadLetterLimits(options.deadLetters);
  const settings: MeshNatsSettings = { replicas: 1, ...options.nats, host: address };
  const log = options.log ?? createLogger({ client: address });
  const [{ natsTransportFor, connectNats }, { startNatsRegistry }] = await Promise.all([import("./nats-transport.ts"), import("./nats-registry.ts")]);
  const registry = new Registry();
  const scheduler = options.scheduler ?? schedulerFromEnv();
  registry.upsert({
    name: address, instance: 0, address, id: address, socket: `nats:${address}`, capabilities: [], subscriptions: [],
    health: "healthy", kind: "client", host: address, restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now(),
  });
  const connection = await connectNats(settings, `hermes-mesh client ${address}`);
  let transport: Awaited<ReturnType<typeof natsTransportFor>> | undefined;
  let shared: Awaited<ReturnType<typeof startNatsRegistry>> | undefined;
  try {
    shared = await startNatsRegistry({ connection, mesh: settings.mesh, host: address, registry, replicas: settings.replicas, log });
    await shared.initialized;
    transport = await natsTransportFor(settings, address);
    let node: MeshNode | undefined;
    node = await MeshNode.start({
      address,
      socketPath: `nats:${address}`,
      transport,
      routes: registry,
      pick: schedulerPicker(scheduler, (to) => node?.inFlightTo(to) ?? 0),
      onOutcome: (to, ok, latencyMs) => scheduler.record(to, { ok, latencyMs }),
      onEvent: options.onEvent,
      deadLetters: options.deadLetters,
    });
    const started = node;
    const unfollow = registry.onUpdate((update) => follow(started, update));
    const opened = { shared, transport };
    return {
      node: started,
      registry,
      subscribe: (patterns) => void registry.patch(address, { subscriptions: [...patterns], updatedAt: Date.now() }),
      async close() {
        unfollow();
        await started.close();
        await opened.transport.close();
        await opened.shared.close();
        await connection.drain().catch(() => {});
      },
    };
  } catch (error) {
    await transport?.close().catch(() => {});
    await shared?.close().catch(() => {});
    await connection.close().catch(() => {});
    throw error;
  }
}
