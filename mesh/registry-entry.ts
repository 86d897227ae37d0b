/** Health of one actor instance, as the supervisor sees it. */
export type ActorHealth = "starting" | "healthy" | "unhealthy" | "down";

/**
 * One actor instance in the mesh registry. The supervisor owns the registry; every actor holds
 * a snapshot (kept current by updates on its control connection) and routes from it locally.
 */
export interface RegistryEntry {
  /** Actor name from the mesh file, e.g. "echo". Every instance of a pool shares it. */
  name: string;
  /** Index within the pool, from 0. */
  instance: number;
  /** Unique address of this instance: the name for a single instance, "name#i" in a pool. */
  address: string;
  /** Stable id (docs/protocol.md §8), same across restarts: stableAgentId(address, mesh name, hostname). */
  id: string;
  /** Unix socket path the instance listens on. */
  socket: string;
  capabilities: string[];
  /** Topic patterns (`*` one level, `#` zero or more levels). */
  subscriptions: string[];
  health: ActorHealth;
  pid?: number;
  restarts: number;
  /** Envelopes waiting in the mailbox, from the latest heartbeat. */
  queueDepth: number;
  /** Handlers running, from the latest heartbeat. */
  inFlight: number;
  /** ms since epoch of the last change. */
  updatedAt: number;
  /** An actor of the supervisor tree, or a program that joined from outside (connectMesh, the gateway). */
  kind?: "actor" | "client";
}
