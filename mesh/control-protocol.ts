/**
 * The control plane between the supervisor and the mesh's members, carried as ordinary Hermes
 * envelopes (request/response and events) on `<mesh dir>/supervisor.sock`. Payloads are plain
 * maps with an `op`; what they carry is documented in docs/protocol.md ("Control plane").
 */
import { join } from "node:path";

/** Address of the supervisor on the control socket. */
export const SUPERVISOR_ADDRESS = "supervisor";

/**
 * What both ends of a control connection offer as `ack_delay_ms` (docs/protocol.md §2): its
 * registry updates, heartbeats and load figures need no prompt acks, so an ack rides on the
 * next heartbeat or pong (a side that hears nothing pings after 5 s) instead of waking both
 * processes once more per message: about a fifth of a member's CPU per isolated registry update,
 * and of the supervisor's (bench/wakeup.ts, docs/benchmarks.md).
 */
export const CONTROL_ACK_DELAY_MS = 30_000;

/** The control socket of a mesh directory. */
export function controlSocketPath(dir: string): string {
  return join(dir, "supervisor.sock");
}

/**
 * What a running mesh tells the programs that talk to it, in `<dir>/mesh.json` while it runs:
 * its name and the name (never the value) of the environment variable holding its token, so
 * that the CLI can find the token the way the mesh file says (`mesh.token_env`).
 */
export interface MeshInfo {
  name: string;
  token_env: string | null;
  supervisor_pid: number;
  started_at: number;
  /** Present when the mesh runs over NATS JetStream: how its members reach the servers. */
  nats?: MeshNatsSettings;
  /**
   * Present when the mesh is shared with a group (`mesh.socket_group`): its numeric gid. A
   * listening client makes its socket in `clients/` 0660 with it (mesh/socket-access.ts).
   */
  socket_group?: number;
}

/**
 * How the members of a mesh over NATS JetStream reach it (docs/nats.md): in `mesh.json` and, for
 * the actors a supervisor spawns, in HERMES_NATS (JSON). Credentials are named, never held:
 * `user_env`, `pass_env` and `token_env` are environment variables each member reads.
 */
export interface MeshNatsSettings {
  servers: string[];
  /** The mesh's name: its stream, consumers and registry bucket are named after it. */
  mesh: string;
  /** This host's name in the mesh. */
  host: string;
  user_env?: string;
  pass_env?: string;
  token_env?: string;
  /** Passed through to the NATS client's `tls` option. */
  tls?: Record<string, unknown>;
  /** Replicas of the mesh's stream and bucket (3 in a cluster). */
  replicas: number;
  /** Letters each member's dead subject keeps (the transport's `deadLettersKept`; default 1,000). */
  dead_letters_kept?: number;
}

/** The file of a mesh directory holding its MeshInfo. */
export function meshInfoPath(dir: string): string {
  return join(dir, "mesh.json");
}

/** The socket an actor instance listens on: `<dir>/<name>.sock`, or `<dir>/<name>.<i>.sock` in a pool. */
export function actorSocketPath(dir: string, name: string, instance: number, poolSize: number): string {
  return join(dir, poolSize > 1 ? `${name}.${instance}.sock` : `${name}.sock`);
}

/** Where a joined client listens, when it listens: `<dir>/clients/<address>.sock`. */
export function clientSocketPath(dir: string, address: string): string {
  return join(clientsDir(dir), `${address}.sock`);
}

/** The directory of a mesh's listening clients: `<dir>/clients`. */
export function clientsDir(dir: string): string {
  return join(dir, "clients");
}

/** An instance's address: its name, or `name#i` in a pool. */
export function actorAddress(name: string, instance: number, poolSize: number): string {
  return poolSize > 1 ? `${name}#${instance}` : name;
}

export const ControlOp = {
  /** actor → supervisor (request): I am this instance (its one-time spawn secret, what my module declares); answer: registry snapshot. */
  REGISTER: "register",
  /** actor → supervisor (request): listening and initialised; mark me healthy. */
  READY: "ready",
  /** actor → supervisor (event): alive, with load figures. */
  HEARTBEAT: "heartbeat",
  /** client → supervisor (request): a program outside the tree joins (connectMesh); answer: snapshot. */
  JOIN: "join",
  /** member → supervisor (request): replace this connection's own topic subscriptions. */
  SUBSCRIBE: "subscribe",
  /** anyone → supervisor (request): the registry with process details, for `hermes-mesh ps`. */
  PS: "ps",
  /** anyone → supervisor (request): every actor's counters (from heartbeats) and the registry, for /metrics. */
  STATS: "stats",
  /** supervisor → members (event): a registry update to apply. */
  REGISTRY: "registry",
  /**
   * member → supervisor (event): this member holds envelopes for `address` and cannot reach it
   * (it crashed, or does not answer its dial): tell me first when it is back. Additive: a
   * supervisor that does not know it ignores it, as it does any event but a heartbeat.
   */
  AWAITING: "awaiting",
} as const;
export type ControlOp = (typeof ControlOp)[keyof typeof ControlOp];

/** Load figures an actor reports in each heartbeat. */
export interface HeartbeatPayload {
  op: typeof ControlOp.HEARTBEAT;
  queue_depth: number;
  in_flight: number;
  handled: number;
  dead_letters: number;
}
