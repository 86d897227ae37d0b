import { Buffer } from "node:buffer";
import type { Logger } from "./logger.ts";
import { createEvent, type Envelope, type Payload } from "./envelope.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import { stableAgentId } from "./ids.ts";
import type { Connection } from "./connection.ts";
import { actorSocketPath, clientSocketPath, CONTROL_ACK_DELAY_MS, ControlOp, controlSocketPath, SUPERVISOR_ADDRESS } from "./control-protocol.ts";
import { parseCapabilityInfo, type RegistryEntry, type Registry, type RegistryUpdate } from "./registry.ts";
import { RequestChannel } from "./requests.ts";
import { listen, type Listener } from "./socket-transport.ts";
import { hostname } from "node:os";
import { timingSafeEqual } from "node:crypto";

export interface ControlServerOptions {
  dir: string;
  meshName: string;
  registry: Registry;
  /** Expected heartbeat interval. */
  heartbeatMs: number;
  /**
   * How long an actor may send no heartbeat before it is reported hung (onHung); default three
   * intervals. The check runs every interval, so a hang is found up to one interval later.
   */
  hungAfterMs?: number;
  /** An actor stopped sending heartbeats: kill it so it restarts like a crashed one. */
  onHung: (address: string) => void;
  log: Logger;
  token?: string;
}

interface Member {
  channel: RequestChannel;
  kind: "actor" | "client";
  /** How many updates had been broadcast when it was bound: it has none before (its snapshot is newer). */
  since: number;
  /** Instances it holds envelopes for and cannot reach (op `awaiting`): it hears of their return at once. */
  awaiting?: Set<string>;
  /** Updates held back for it, oldest first: news of a return it does not wait for (RETURN_NEWS_DELAY_MS). */
  later?: RegistryUpdate[];
}

/**
 * How long the news that a restarted instance is back waits for the members that hold nothing
 * for it. Each update wakes every member it goes to, and those woke in the very milliseconds
 * the restarted instance and the senders waiting for it needed the cores: on two cores kill -9
 * to the next answer was 3 to 5 ms slower for the seven idle members of a mesh of eight
 * (docs/benchmarks.md, "A restart's news, first to those who wait for it"). The members that
 * said `awaiting` hear at once; the others a little later, when nothing else is news.
 */
export const RETURN_NEWS_DELAY_MS = 50;

/**
 * The supervisor's side of the control plane: members register on `<dir>/supervisor.sock`,
 * get the registry and every later change, and send heartbeats; a member whose heartbeats
 * stop for `hungAfterMs` is reported hung. The registry here is the original the whole mesh
 * routes from.
 */
export class ControlServer {
  readonly startedAt = Date.now();
  #options: ControlServerOptions;
  #listener!: Listener;
  #members = new Map<string, Member>();
  /** External actors that asked to be forgotten this long after they go, and their timers. */
  #graceMs = new Map<string, number>();
  #graceTimers = new Map<string, ReturnType<typeof setTimeout>>();
  /** The verified address of each control connection: every op acts on it, never on a payload's. */
  #addressOf = new WeakMap<RequestChannel, string>();
  /** One-time registration secrets of the children the supervisor is starting, by address. */
  #spawnSecrets = new Map<string, string>();
  #lastHeartbeat = new Map<string, number>();
  #pendingUpdates: RegistryUpdate[] = [];
  /** How many updates went out before the pending ones. */
  #sentUpdates = 0;
  /** While set (holdUpdates), pending updates wait `maxMs` at most, else for the hold's end. */
  #hold: { maxMs: number } | undefined;
  #holdTimer: ReturnType<typeof setTimeout> | undefined;
  /** Instances whose return from a restart (their `ready`) is in the pending updates. */
  #returning = new Set<string>();
  #laterTimer: ReturnType<typeof setTimeout> | undefined;
  /** Latest counters per actor, from heartbeats (reset when its process restarts, as Prometheus counters may). */
  #stats = new Map<string, Record<string, unknown>>();
  #watchdog: ReturnType<typeof setInterval>;
  #unsubscribe: () => void;

  private constructor(options: ControlServerOptions) {
    this.#options = options;
    this.#unsubscribe = options.registry.onUpdate((update) => this.#broadcast(update));
    this.#watchdog = setInterval(() => this.#checkHeartbeats(), options.heartbeatMs);
    this.#watchdog.unref?.();
  }

  static async start(options: ControlServerOptions): Promise<ControlServer> {
    const server = new ControlServer(options);
    server.#listener = await listen({ path: controlSocketPath(options.dir) }, {
      node: SUPERVISOR_ADDRESS,
      ackDelayMs: CONTROL_ACK_DELAY_MS,
      ...(options.token !== undefined && { requireToken: options.token }),
      onConnection: (connection) => server.#accept(connection),
      // A member whose hello does not match (protocol version, token) is told why; so is this log.
      onRefused: (error) => error.code !== ErrorCode.UNAVAILABLE && options.log.warn("a member's hello was refused", { code: error.code, error: error.message, ...error.fields }),
    });
    return server;
  }

  /**
   * The supervisor is about to spawn the instance `address` with `secret` in its environment:
   * only a `register` presenting it (once) makes a connection that instance. A newer secret
   * replaces an unused older one, so a restarted child's predecessor cannot register.
   *
   * @example
   * const secret = newSpawnSecret();
   * control.expectSpawn("echo#0", secret); // then spawn with HERMES_SPAWN_SECRET=secret
   */
  expectSpawn(address: string, secret: string): void {
    this.#spawnSecrets.set(address, secret);
  }

  async close(): Promise<void> {
    clearInterval(this.#watchdog);
    this.#unsubscribe();
    // What a hold kept goes nowhere now: its members' connections close with the listener.
    clearTimeout(this.#holdTimer);
    clearTimeout(this.#laterTimer);
    this.#hold = undefined;
    this.#pendingUpdates = [];
    await this.#listener.close();
  }

  #accept(connection: Connection): void {
    const channel: RequestChannel = new RequestChannel(connection, SUPERVISOR_ADDRESS, (request): Payload => this.#handle(request, channel));
    channel.onEvent = (event: Envelope) => this.#onEvent(event, channel);
    connection.closed.then(() => this.#disconnected(channel));
  }

  #handle(request: Envelope, channel: RequestChannel): Payload {
    const p = request.payload;
    const registry = this.#options.registry;
    switch (p.op) {
      case ControlOp.REGISTER: {
        const address = String(p.address);
        if (p.external === true) return this.#registerExternal(address, p, channel);
        const entry = registry.byAddress(address);
        if (!entry || entry.kind === "client") throw new HermesError(ErrorCode.UNROUTABLE, `${address} is not an actor of this mesh`, { target: address, known: registry.known() });
        const declared = (key: "capabilities" | "subscriptions") => [...new Set([...entry[key], ...stringList(p[key])])];
        const capabilities = declared("capabilities");
        const capabilityInfo = parseCapabilityInfo(p.capability_info, capabilities);
        this.#verifySpawnSecret(address, p.secret);
        this.#bind(channel, address, "actor");
        // The pid is not taken from the message: the supervisor records the one it spawned.
        registry.patch(address, { capabilities, subscriptions: declared("subscriptions"), ...(capabilityInfo && { capabilityInfo }), ...durableOf(p), updatedAt: Date.now() });
        return { entries: registry.snapshot(), heartbeat_ms: this.#options.heartbeatMs };
      }
      case ControlOp.READY: {
        const address = this.#ownAddress(channel, "actor");
        this.#lastHeartbeat.set(address, Date.now());
        // Back from a restart: who waits for nothing from it hears of it a little later.
        if ((registry.byAddress(address)?.restarts ?? 0) > 0) this.#returning.add(address);
        registry.patch(address, { health: "healthy", updatedAt: Date.now() });
        return { ok: true };
      }
      case ControlOp.JOIN: {
        const address = String(p.address);
        this.#checkClientAddress(address);
        this.#bind(channel, address, "client");
        // A client listens only where its address says: never on a socket of its own choosing
        // (over NATS, its address's own subject: docs/nats.md).
        const socket = p.socket === undefined ? "" : p.socket === `nats:${address}` ? p.socket : clientSocketPath(this.#options.dir, address);
        if (p.socket !== undefined && p.socket !== socket) {
          this.#unbind(channel);
          throw new HermesError(ErrorCode.INVALID_REQUEST, `a client's socket must be ${socket}`, { reason: `socket ${JSON.stringify(p.socket)} is not the client's own`, expected: socket });
        }
        registry.upsert(clientEntry(address, socket, stringList(p.subscriptions), this.#options.meshName));
        return { entries: registry.snapshot(), heartbeat_ms: this.#options.heartbeatMs };
      }
      case ControlOp.SUBSCRIBE: {
        registry.patch(this.#ownAddress(channel), { subscriptions: stringList(p.subscriptions), updatedAt: Date.now() });
        return { ok: true };
      }
      case ControlOp.STATS:
        return { entries: registry.snapshot(), stats: Object.fromEntries(this.#stats) };
      case ControlOp.PS:
        return {
          mesh: { name: this.#options.meshName, dir: this.#options.dir, supervisor_pid: process.pid, started_at: this.startedAt },
          entries: registry.snapshot().map((e) => ({
            ...e,
            heartbeat_age_ms: this.#heartbeatAge(e.address),
            dead_letters: Number(this.#stats.get(e.address)?.dead_letters ?? 0),
          })),
        };
    }
    throw new HermesError(ErrorCode.INVALID_REQUEST, `unknown control op '${String(p.op)}'`, { reason: "unknown op", expected: Object.values(ControlOp) });
  }

  /** The spawn secret is consumed by its first use, right or wrong guesses aside. */
  #verifySpawnSecret(address: string, presented: unknown): void {
    const expected = this.#spawnSecrets.get(address);
    if (expected === undefined || typeof presented !== "string" || !sameSecret(presented, expected)) {
      this.#options.log.warn("register refused: no valid spawn secret", { actor: address });
      throw new HermesError(ErrorCode.AUTH_FAILED, `register as ${address} refused: it needs the one-time secret the supervisor gave the process it spawned`, { auth_method: "spawn_secret" });
    }
    this.#spawnSecrets.delete(address);
  }

  /**
   * An actor from outside the tree (docs/actors.md, "External members"): the connection's mesh
   * token is its proof (the hello checked it), never a spawn secret. It may take a name the tree
   * does not own, once at a time; it listens where its address says (its socket in the mesh
   * directory, or its NATS subject). Its pid is shown, never signalled.
   */
  #registerExternal(address: string, p: Payload, channel: RequestChannel): Payload {
    const registry = this.#options.registry;
    const refuse = (why: string) => {
      throw new HermesError(ErrorCode.INVALID_REQUEST, `external actor ${JSON.stringify(address)} refused: ${why}`, { reason: why, expected: "a name [a-z][a-z0-9_-]* that no actor of the tree and no live member has" });
    };
    const entry = registry.byAddress(address);
    // `name#i` only as an instance the mesh file left to external members (a pool's `external: n`).
    if (entry && !entry.external) refuse(entry.kind === "client" ? "a client has that name" : "the supervisor tree owns that name");
    const poolInstance = /^[a-z][a-z0-9_-]{0,63}#\d{1,3}$/.test(address) && entry?.external === true;
    if (!poolInstance && !/^[a-z][a-z0-9_-]{0,63}$/.test(address)) refuse("it is not an actor name ([a-z][a-z0-9_-]*, at most 64), nor an external instance of a pool (name#i)");
    if (this.#members.has(address)) refuse("an instance of it is registered already");
    // clients/ for a member of a shared mesh's group, which may not create in the mesh directory.
    const sockets = [entry?.socket ?? actorSocketPath(this.#options.dir, address, 0, 1), clientSocketPath(this.#options.dir, address), `nats:${address}`];
    const socket = typeof p.socket === "string" && sockets.includes(p.socket) ? p.socket : sockets[0]!;
    // A pool's instance has the mesh file's capabilities and subscriptions too, as its siblings do.
    const capabilities = [...new Set([...(entry?.capabilities ?? []), ...stringList(p.capabilities)])];
    const capabilityInfo = parseCapabilityInfo(p.capability_info, capabilities);
    this.#bind(channel, address, "actor");
    clearTimeout(this.#graceTimers.get(address));
    this.#graceTimers.delete(address);
    const grace = Number(p.grace_ms);
    if (Number.isSafeInteger(grace) && grace > 0) this.#graceMs.set(address, grace);
    registry.upsert({
      name: entry?.name ?? address, instance: entry?.instance ?? 0, address, id: stableAgentId(address, this.#options.meshName, hostname()), socket,
      capabilities,
      ...(capabilityInfo && { capabilityInfo }),
      subscriptions: [...new Set([...(entry?.subscriptions ?? []), ...stringList(p.subscriptions)])],
      health: "starting", kind: "actor", external: true, ...durableOf(p),
      ...(Number.isSafeInteger(p.pid) && { pid: p.pid as number }),
      restarts: entry?.pid !== undefined ? entry.restarts + 1 : 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now(),
    });
    this.#options.log.info("external actor registered", { actor: address, again: entry !== undefined });
    return { entries: registry.snapshot(), heartbeat_ms: this.#options.heartbeatMs };
  }

  /**
   * Clients live in their own namespace: never an actor's name (a pool's name included), an
   * instance address, a stable id, or anything with the instance separator `#`.
   */
  #checkClientAddress(address: string): void {
    const refuse = (why: string) => {
      throw new HermesError(ErrorCode.INVALID_REQUEST, `client address ${JSON.stringify(address)} refused: ${why}`, { reason: why, expected: "a unique client address of letters, digits, '.', '_' and '-' that names no actor" });
    };
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(address)) refuse("it is not a plain name (letters, digits, '.', '_', '-'; at most 128)");
    if (address === SUPERVISOR_ADDRESS) refuse("it is the supervisor's");
    const taken = this.#options.registry.resolveTarget(address);
    if (taken.length > 0) refuse(taken.some((e) => e.kind !== "client") ? "it names an actor of the mesh" : "it is taken");
  }

  #bind(channel: RequestChannel, address: string, kind: Member["kind"]): void {
    const bound = this.#addressOf.get(channel);
    if (bound !== undefined) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, `this connection is already ${bound}`, { reason: "one member per control connection", expected: "a new connection for another member" });
    }
    this.#addressOf.set(channel, address);
    this.#members.set(address, { channel, kind, since: this.#sentUpdates + this.#pendingUpdates.length });
  }

  #unbind(channel: RequestChannel): void {
    const address = this.#addressOf.get(channel);
    if (address === undefined) return;
    this.#addressOf.delete(channel);
    if (this.#members.get(address)?.channel === channel) this.#members.delete(address);
  }

  /** The address this connection registered or joined as (code 5 before it did). */
  #ownAddress(channel: RequestChannel, kind?: Member["kind"]): string {
    const address = this.#addressOf.get(channel);
    if (address === undefined || (kind !== undefined && this.#members.get(address)?.kind !== kind)) {
      throw new HermesError(ErrorCode.AUTH_FAILED, kind === "actor" ? "only a registered actor may do this: register first" : "register or join first", { auth_method: kind === "actor" ? "spawn_secret" : "register_or_join" });
    }
    return address;
  }

  #onEvent(event: Envelope, channel: RequestChannel): void {
    const p = event.payload;
    if (p.op === ControlOp.AWAITING) return this.#onAwaiting(channel, p.address);
    if (p.op !== ControlOp.HEARTBEAT) return;
    // A heartbeat counts for the connection's own registered actor, whatever it names.
    const address = this.#addressOf.get(channel);
    if (address === undefined || this.#members.get(address)?.kind !== "actor") return;
    this.#lastHeartbeat.set(address, Date.now());
    if (p.stats && typeof p.stats === "object") this.#stats.set(address, { ...(p.stats as Record<string, unknown>), dead_letters: Number(p.dead_letters) || 0 });
    const entry = this.#options.registry.byAddress(address);
    const queueDepth = Number(p.queue_depth) || 0;
    const inFlight = Number(p.in_flight) || 0;
    // Only changes are broadcast: an idle mesh sends no registry traffic.
    if (entry && (entry.queueDepth !== queueDepth || entry.inFlight !== inFlight)) {
      this.#options.registry.patch(address, { queueDepth, inFlight, updatedAt: Date.now() });
    }
  }

  /** The member of `channel` waits for `address` (a known instance; anything else is ignored). */
  #onAwaiting(channel: RequestChannel, address: unknown): void {
    const own = this.#addressOf.get(channel);
    const member = own === undefined ? undefined : this.#members.get(own);
    if (!member || member.channel !== channel || typeof address !== "string" || !this.#options.registry.byAddress(address)) return;
    (member.awaiting ??= new Set()).add(address);
    // Its return may be held back for this member already: it goes now.
    if (member.later?.some((update) => update.type === "patch" && update.address === address)) this.#sendLater(own!, member);
  }

  #disconnected(channel: RequestChannel): void {
    for (const [address, member] of this.#members) {
      if (member.channel !== channel) continue;
      this.#members.delete(address);
      if (member.kind === "client") this.#options.registry.remove(address);
      else if (this.#options.registry.byAddress(address)?.external) this.#externalGone(address);
    }
  }

  /**
   * An external actor's connection ended: it is down, and what senders hold for it waits for
   * its next registration (they redeliver then). With a grace period it is forgotten after it.
   */
  #externalGone(address: string): void {
    const registry = this.#options.registry;
    registry.patch(address, { health: "down", updatedAt: Date.now() });
    const grace = this.#graceMs.get(address);
    if (grace === undefined) return;
    const timer = setTimeout(() => {
      this.#graceTimers.delete(address);
      if (!this.#members.has(address) && registry.byAddress(address)?.external) registry.remove(address);
    }, grace);
    (timer as { unref?: () => void }).unref?.();
    this.#graceTimers.set(address, timer);
  }

  #heartbeatAge(address: string): number | null {
    const at = this.#lastHeartbeat.get(address);
    return at === undefined ? null : Date.now() - at;
  }

  #checkHeartbeats(): void {
    const now = Date.now();
    const limit = this.#options.hungAfterMs ?? 3 * this.#options.heartbeatMs;
    for (const entry of this.#options.registry.snapshot()) {
      if (entry.health !== "healthy" || !this.#members.has(entry.address) || this.#members.get(entry.address)!.kind !== "actor") continue;
      const at = this.#lastHeartbeat.get(entry.address) ?? now;
      if (now - at > limit) {
        this.#lastHeartbeat.set(entry.address, now);
        this.#options.log.warn("actor missed heartbeats: killing it", { actor: entry.address, silent_ms: now - at });
        this.#options.registry.patch(entry.address, { health: "unhealthy", updatedAt: now });
        this.#options.onHung(entry.address);
      }
    }
  }

  /**
   * Updates of one tick (or of a hold) go out as one event per member: a start produces several
   * changes, and sending each to every member made starting a large mesh cost the square of its size.
   */
  #broadcast(update: RegistryUpdate): void {
    if (this.#pendingUpdates.push(update) > 1) return;
    if (this.#hold === undefined) {
      queueMicrotask(this.#sendPendingUpdates);
      return;
    }
    this.#holdTimer = setTimeout(this.#sendPendingUpdates, this.#hold.maxMs);
    (this.#holdTimer as { unref?: () => void }).unref?.();
  }

  /**
   * Holds registry updates back until the returned function is called, each for `maxMs` at
   * most: they then go out together, one event per member. While a tree starts, every start
   * announced at once woke every member started before it, the square of the mesh's size in
   * wake-ups. A member that joins meanwhile gets the registry as it is, and of what was held
   * only what came after. A later hold replaces this one (from its next update on); a release
   * ends only its own hold.
   *
   * @example
   * const release = control.holdUpdates(500);
   * await root.start(); // members hear of the starts at most 500 ms late
   * release();          // and of the rest now
   */
  holdUpdates(maxMs: number): () => void {
    const hold = { maxMs };
    this.#hold = hold;
    return () => {
      if (this.#hold !== hold) return;
      this.#hold = undefined;
      this.#sendPendingUpdates();
    };
  }

  /** Sends what is pending, one event per member (a field: a microtask's and a timer's callback). */
  #sendPendingUpdates = (): void => {
    clearTimeout(this.#holdTimer);
    this.#holdTimer = undefined;
    const updates = this.#pendingUpdates;
    if (updates.length === 0) return;
    const first = this.#sentUpdates;
    const returning = this.#returning;
    this.#pendingUpdates = [];
    this.#returning = new Set();
    this.#sentUpdates += updates.length;
    for (const [address, member] of this.#members) {
      if (!member.channel.connection.isOpen) continue;
      // A member bound after some of them has them in its snapshot, or a newer state.
      const news = member.since <= first ? updates : updates.slice(member.since - first);
      if (news.length === 0) continue;
      if (onlyReturns(news, returning) && ![...returning].some((back) => member.awaiting?.has(back))) {
        (member.later ??= []).push(...news);
        this.#laterTimer ??= setTimeout(this.#sendAllLater, RETURN_NEWS_DELAY_MS);
        (this.#laterTimer as { unref?: () => void }).unref?.();
        continue;
      }
      // What was held back for it goes first: a member sees the updates in order.
      const later = member.later;
      member.later = undefined;
      this.#emitUpdates(address, member, later ? [...later, ...news] : news);
    }
  };

  /** What was held back for every member, now. */
  #sendAllLater = (): void => {
    this.#laterTimer = undefined;
    for (const [address, member] of this.#members) if (member.later) this.#sendLater(address, member);
  };

  #sendLater(address: string, member: Member): void {
    const later = member.later;
    member.later = undefined;
    if (later && member.channel.connection.isOpen) this.#emitUpdates(address, member, later);
  }

  /** One `registry` event to `member`; the returns (and removals) in it end what it waited for. */
  #emitUpdates(address: string, member: Member, updates: RegistryUpdate[]): void {
    if (member.awaiting) {
      for (const update of updates) {
        if (update.type === "remove" || (update.type === "patch" && update.changes.health === "healthy")) member.awaiting.delete(update.address);
      }
    }
    try {
      member.channel.emit(createEvent(SUPERVISOR_ADDRESS, { target_agent: address }, { op: ControlOp.REGISTRY, updates }));
    } catch {
      // The member is going away; its connection's close handler cleans up.
    }
  }
}

/** Every update in `news` is the return of one of `returning` (nothing else that would wait with it). */
function onlyReturns(news: readonly RegistryUpdate[], returning: ReadonlySet<string>): boolean {
  return returning.size > 0 && news.every((update) => update.type === "patch" && returning.has(update.address));
}

/** A fresh one-time registration secret for a child about to be spawned. */
export function newSpawnSecret(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex");
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** What a `register` said of its dedupe memory (`durable`), when it said it with a boolean. */
function durableOf(p: Payload): { durable?: boolean } {
  return typeof p.durable === "boolean" ? { durable: p.durable } : {};
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

function clientEntry(address: string, socket: string, subscriptions: string[], meshName: string): RegistryEntry {
  return {
    name: address,
    instance: 0,
    address,
    id: stableAgentId(address, meshName, hostname()),
    socket,
    capabilities: [],
    subscriptions,
    health: "healthy",
    kind: "client",
    restarts: 0,
    queueDepth: 0,
    inFlight: 0,
    updatedAt: Date.now(),
  };
}
