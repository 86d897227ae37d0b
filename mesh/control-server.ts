import type { Logger } from "../src/actor/logger.ts";
import { createEvent } from "../src/protocol/envelope-factory.ts";
import type { Envelope, Payload } from "../src/protocol/envelope.ts";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";
import { stableAgentId } from "../src/protocol/ids.ts";
import type { Connection } from "./connection.ts";
import { ControlOp, controlSocketPath, SUPERVISOR_ADDRESS } from "./control-protocol.ts";
import type { RegistryEntry } from "./registry-entry.ts";
import type { Registry, RegistryUpdate } from "./registry.ts";
import { RequestChannel } from "./request-channel.ts";
import { listen, type Listener } from "./transport.ts";
import { hostname } from "node:os";

export interface ControlServerOptions {
  dir: string;
  meshName: string;
  registry: Registry;
  /** Expected heartbeat interval; three missed intervals mark an actor hung. */
  heartbeatMs: number;
  /** An actor stopped sending heartbeats: kill it so it restarts like a crashed one. */
  onHung: (address: string) => void;
  log: Logger;
  token?: string;
}

interface Member {
  channel: RequestChannel;
  kind: "actor" | "client";
  pid?: number;
}

/**
 * The supervisor's side of the control plane: members register on `<dir>/supervisor.sock`,
 * get the registry and every later change, and send heartbeats; a member whose heartbeats
 * stop is reported hung. The registry here is the original the whole mesh routes from.
 */
export class ControlServer {
  readonly startedAt = Date.now();
  #options: ControlServerOptions;
  #listener!: Listener;
  #members = new Map<string, Member>();
  #lastHeartbeat = new Map<string, number>();
  #pendingUpdates: RegistryUpdate[] = [];
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
      ...(options.token !== undefined && { requireToken: options.token }),
      onConnection: (connection) => server.#accept(connection),
    });
    return server;
  }

  async close(): Promise<void> {
    clearInterval(this.#watchdog);
    this.#unsubscribe();
    await this.#listener.close();
  }

  #accept(connection: Connection): void {
    const channel: RequestChannel = new RequestChannel(connection, SUPERVISOR_ADDRESS, (request): Payload => this.#handle(request, channel));
    channel.onEvent = (event: Envelope) => this.#onEvent(event);
    connection.closed.then(() => this.#disconnected(channel));
  }

  #handle(request: Envelope, channel: RequestChannel): Payload {
    const p = request.payload;
    const registry = this.#options.registry;
    switch (p.op) {
      case ControlOp.REGISTER: {
        const address = String(p.address);
        const entry = registry.byAddress(address);
        if (!entry) throw new HermesError(ErrorCode.UNROUTABLE, `${address} is not an actor of this mesh`, { target: address, known: registry.known() });
        this.#members.set(address, { channel, kind: "actor", pid: Number(p.pid) });
        const declared = (key: "capabilities" | "subscriptions") => [...new Set([...entry[key], ...(Array.isArray(p[key]) ? (p[key] as string[]) : [])])];
        registry.patch(address, { pid: Number(p.pid), capabilities: declared("capabilities"), subscriptions: declared("subscriptions"), updatedAt: Date.now() });
        return { entries: registry.snapshot(), heartbeat_ms: this.#options.heartbeatMs };
      }
      case ControlOp.READY: {
        const address = String(p.address);
        this.#lastHeartbeat.set(address, Date.now());
        registry.patch(address, { health: "healthy", updatedAt: Date.now() });
        return { ok: true };
      }
      case ControlOp.JOIN: {
        const address = String(p.address);
        if (registry.byAddress(address)) throw new HermesError(ErrorCode.INVALID_REQUEST, `address ${address} is taken`, { reason: "duplicate address", expected: "a unique client address" });
        this.#members.set(address, { channel, kind: "client" });
        registry.upsert(clientEntry(address, typeof p.socket === "string" ? p.socket : "", stringList(p.subscriptions), this.#options.meshName));
        return { entries: registry.snapshot(), heartbeat_ms: this.#options.heartbeatMs };
      }
      case ControlOp.SUBSCRIBE: {
        registry.patch(String(p.address), { subscriptions: stringList(p.subscriptions), updatedAt: Date.now() });
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

  #onEvent(event: Envelope): void {
    const p = event.payload;
    if (p.op !== ControlOp.HEARTBEAT) return;
    const address = event.source_agent;
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

  #disconnected(channel: RequestChannel): void {
    for (const [address, member] of this.#members) {
      if (member.channel !== channel) continue;
      this.#members.delete(address);
      if (member.kind === "client") this.#options.registry.remove(address);
    }
  }

  #heartbeatAge(address: string): number | null {
    const at = this.#lastHeartbeat.get(address);
    return at === undefined ? null : Date.now() - at;
  }

  #checkHeartbeats(): void {
    const now = Date.now();
    const limit = 3 * this.#options.heartbeatMs;
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
   * Updates of one tick go out as one event per member: a start produces several changes, and
   * sending each to every member made starting a large mesh cost the square of its size.
   */
  #broadcast(update: RegistryUpdate): void {
    if (this.#pendingUpdates.push(update) > 1) return;
    queueMicrotask(() => {
      const updates = this.#pendingUpdates;
      this.#pendingUpdates = [];
      for (const [address, member] of this.#members) {
        if (!member.channel.connection.isOpen) continue;
        try {
          member.channel.emit(createEvent(SUPERVISOR_ADDRESS, { target_agent: address }, { op: ControlOp.REGISTRY, updates }));
        } catch {
          // The member is going away; its connection's close handler cleans up.
        }
      }
    });
  }
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
