import { createEvent, type Payload } from "./envelope.ts";
import { CONTROL_ACK_DELAY_MS, ControlOp, controlSocketPath, SUPERVISOR_ADDRESS } from "./control-protocol.ts";
import { type CapabilityInfo, type RegistryEntry, parseRegistryUpdate, type Registry, type RegistryUpdate } from "./registry.ts";
import { RequestChannel } from "./requests.ts";
import { dial } from "./socket-transport.ts";
import type { Connection } from "./connection.ts";

/** Options of a control-plane connection. */
export interface ControlClientOptions {
  dir: string;
  /** This member's address. */
  address: string;
  /** Kept current with the supervisor's updates. */
  registry: Registry;
  token?: string;
  /** Called after each registry update is applied (links use it to redial revived peers). */
  onUpdate?: (registry: Registry) => void;
}

const CONTROL_TIMEOUT_MS = 10_000;

/** A control connection opened before its member knew who it would be (predialControl). */
let predialed: { dir: string; token: string | undefined; connection: Promise<Connection | undefined> } | undefined;

/**
 * Opens this process's control connection to the mesh in `dir` ahead of need: the next
 * `ControlClient.connect` for the same `dir` and `token` takes it instead of dialling. A
 * standby actor host does this while it waits (src/actor/host-main.ts), so a restart handed to
 * it skips the dial and the hello round trip. Until it registers, such a connection is only a
 * token holder's connection: who it is, the spawn secret proves later. Its hello names it
 * `standby-<pid>`. Resolves with the connection once it is open, or undefined when the dial
 * failed (connect then dials as usual).
 *
 * @example
 * predialControl(dir, process.env.HERMES_MESH_TOKEN); // later:
 * const control = await ControlClient.connect({ dir, address: "echo", registry }); // takes it
 */
export function predialControl(dir: string, token?: string): Promise<Connection | undefined> {
  void predialed?.connection.then((connection) => connection?.close());
  const connection = dial({ path: controlSocketPath(dir) }, { node: `standby-${process.pid}`, ackDelayMs: CONTROL_ACK_DELAY_MS, ...(token !== undefined && { token }) }).catch(() => undefined);
  predialed = { dir, token, connection };
  return connection;
}

/** The pre-dialled connection when it is for `dir` and `token` and still open; any other is closed. */
async function takePredialed(dir: string, token: string | undefined): Promise<Connection | undefined> {
  const ahead = predialed;
  predialed = undefined;
  const connection = await ahead?.connection;
  if (!connection) return undefined;
  if (ahead!.dir === dir && ahead!.token === token && connection.isOpen) return connection;
  void connection.close();
  return undefined;
}

/**
 * A member's connection to the supervisor: registration, readiness, heartbeats, and the
 * registry snapshot plus every later update, applied to a local Registry.
 */
export class ControlClient {
  readonly channel: RequestChannel;
  #options: ControlClientOptions;
  /**
   * Registry updates that came while a register or join was answered, kept for after its
   * snapshot, one list per such call out: an update sent after the answer can be read (in the
   * same chunk) before the answer's await resumes, and the snapshot, older, would undo it. Those
   * sent before the answer are in the snapshot already and replay to the same state.
   */
  #holds: RegistryUpdate[][] = [];

  private constructor(channel: RequestChannel, options: ControlClientOptions) {
    this.channel = channel;
    this.#options = options;
    channel.onEvent = (event) => {
      if (event.payload.op !== ControlOp.REGISTRY) return;
      const { updates, update } = event.payload;
      const parsed = (Array.isArray(updates) ? updates : [update]).map(parseRegistryUpdate);
      if (this.#holds.length === 0) this.#apply(parsed);
      else for (const held of this.#holds) held.push(...parsed);
    };
  }

  /**
   * Connects to `<dir>/supervisor.sock` (or takes the connection predialControl opened there).
   * Rejects with code 10 when no mesh runs there, and with
   * code 5 (`auth_method: "unix_permissions"`) when this user may not reach it: the message
   * names the owner, group and mode that refused, and `mesh.socket_group` (mesh/socket-access.ts).
   */
  static async connect(options: ControlClientOptions): Promise<ControlClient> {
    const connection = (predialed && (await takePredialed(options.dir, options.token))) || await dial({ path: controlSocketPath(options.dir) }, {
      node: options.address,
      ackDelayMs: CONTROL_ACK_DELAY_MS,
      ...(options.token !== undefined && { token: options.token }),
    });
    return new ControlClient(new RequestChannel(connection, options.address), options);
  }

  /** Resolves when the supervisor connection closes (the supervisor is gone). */
  get closed(): Promise<void> {
    return this.channel.connection.closed;
  }

  /**
   * An actor instance introduces itself with the one-time secret the supervisor spawned it with
   * (a wrong one is code 5); the registry snapshot comes back.
   */
  async register(
    secret: string | undefined,
    declared: { capabilities: readonly string[]; subscriptions: readonly string[]; capability_info?: Record<string, CapabilityInfo>; durable?: boolean },
    external?: { socket?: string; graceMs?: number },
  ): Promise<{ heartbeatMs: number }> {
    // An external actor (outside the tree) proves itself with the mesh token of this connection, not a secret.
    const how = external ? { external: true, ...(external.socket && { socket: external.socket }), ...(external.graceMs !== undefined && { grace_ms: external.graceMs }) } : { secret };
    const reply = await this.#snapshotCall({ op: ControlOp.REGISTER, address: this.#options.address, ...how, pid: process.pid, ...declared });
    return { heartbeatMs: Number(reply.heartbeat_ms) || 1000 };
  }

  /** A program outside the tree joins (optionally listening on `socket` for what it subscribes to). */
  async join(socket: string | undefined, subscriptions: readonly string[]): Promise<void> {
    await this.#snapshotCall({ op: ControlOp.JOIN, address: this.#options.address, ...(socket && { socket }), subscriptions });
  }

  /** Replaces this member's topic subscriptions. */
  async subscribe(subscriptions: readonly string[]): Promise<void> {
    await this.#call({ op: ControlOp.SUBSCRIBE, address: this.#options.address, subscriptions });
  }

  /** Listening and initialised: the supervisor marks this instance healthy. */
  async ready(): Promise<void> {
    await this.#call({ op: ControlOp.READY, address: this.#options.address });
  }

  /** The registry with process details. */
  async ps(): Promise<Payload> {
    return this.#call({ op: ControlOp.PS });
  }

  /** Every actor's counters from its latest heartbeat, with the registry. */
  async stats(): Promise<Payload> {
    return this.#call({ op: ControlOp.STATS });
  }

  /** Sends a heartbeat with load figures (no answer). */
  heartbeat(load: { queue_depth: number; in_flight: number; handled: number; dead_letters: number; stats?: Payload }): void {
    if (!this.channel.connection.isOpen) return;
    this.channel.emit(createEvent(this.#options.address, { target_agent: SUPERVISOR_ADDRESS }, { op: ControlOp.HEARTBEAT, ...load }));
  }

  /**
   * Says that envelopes here wait for `address`, which this member cannot reach: the supervisor
   * sends this member the news of its return at once, and may tell members that wait for
   * nothing a little later (mesh/control-server.ts). No answer, and it never throws: a hint
   * that cannot go (the connection closing or full) costs only the news's speed.
   */
  awaiting(address: string): void {
    try {
      if (this.channel.connection.isOpen) this.channel.emit(createEvent(this.#options.address, { target_agent: SUPERVISOR_ADDRESS }, { op: ControlOp.AWAITING, address }));
    } catch {
      // Told with everyone else, then.
    }
  }

  async close(): Promise<void> {
    await this.channel.connection.close();
  }

  async #call(payload: Payload): Promise<Payload> {
    return (await this.channel.request({ target_agent: SUPERVISOR_ADDRESS }, payload, { timeoutMs: CONTROL_TIMEOUT_MS })).payload;
  }

  /** A call answered with the registry: its snapshot, then every update that came meanwhile, in order. */
  async #snapshotCall(payload: Payload): Promise<Payload> {
    const held: RegistryUpdate[] = [];
    this.#holds.push(held);
    let reply: Payload;
    try {
      reply = await this.#call(payload);
    } catch (error) {
      if (held.length > 0) this.#apply(held); // no snapshot came: what was held goes on as it would have
      throw error;
    } finally {
      this.#holds.splice(this.#holds.indexOf(held), 1);
    }
    this.#apply([{ type: "snapshot", entries: reply.entries as RegistryEntry[] }, ...held]);
    return reply;
  }

  #apply(updates: RegistryUpdate[]): void {
    for (const update of updates) this.#options.registry.applyUpdate(update);
    this.#options.onUpdate?.(this.#options.registry);
  }
}
