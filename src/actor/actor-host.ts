import { actorAddress, clientSocketPath } from "../../mesh/control-protocol.ts";
import { AccessMode, socketGroupFor } from "../../mesh/socket-access.ts";
import { joinMesh, type MeshMember } from "../../mesh/join.ts";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { ActorRuntime } from "./actor-runtime.ts";
import type { DurableStore } from "./durable-store.ts";
import { EventLog } from "../observability/event-log.ts";
import type { ActorDefinition } from "./define-actor.ts";
import { createLogger } from "../../mesh/logger.ts";

/** Everything an actor process needs to know, from its command line (see host-main.ts). */
export interface ActorHostOptions {
  module: string;
  name: string;
  instance: number;
  pool: number;
  dir: string;
  concurrency?: number;
  window?: number;
  token?: string;
  shutdownMs?: number;
  /** Keep dedupe set, outbox and state in `<dir>/data/<name>[.<i>].db` (also when the module says so). */
  durable?: boolean;
  /** Write handled and sent messages to `<dir>/logs/<address>.jsonl`. Default true. */
  events?: boolean;
  /** A standby host's: when its assignment came (ms since the process started; see host-main.ts). */
  assignedAt?: number;
  /** Started outside the supervisor tree (`hermes-mesh actor`): registers with the token; Ctrl-C stops it. */
  external?: { graceMs?: number };
}

/** The argument that starts the host as a standby, waiting on stdin for a StandbyAssignment. */
export const STANDBY_FLAG = "--standby";

/**
 * What a standby host reads, one JSON line: the host's arguments and the changes from the
 * standby's environment to the actor's (`null` removes a variable).
 */
export interface StandbyAssignment {
  argv: string[];
  env: Record<string, string | null>;
}

/**
 * What an actor process's loaded line (`hermes-mesh:loaded ` and this as JSON, printed once its
 * module is imported) tells the supervisor: its start time (`origin`, epoch ms) and, in ms
 * after it, when the host's code was loaded, a standby's assignment came, and the module was
 * imported. The supervisor sees the later steps itself (registered, ready).
 */
export interface StartupReport {
  origin: number;
  loaded: number;
  assigned?: number;
  imported: number;
}

// Imported only when used: most actors are not durable, and bun:sqlite is part of every start otherwise.
async function openDurableStore(options: ActorHostOptions): Promise<DurableStore> {
  const { DurableStore } = await import("./durable-store.ts");
  const data = join(options.dir, "data");
  mkdirSync(data, { recursive: true, mode: 0o700 });
  const path = join(data, `${options.pool > 1 ? `${options.name}.${options.instance}` : options.name}.db`);
  // The member's alone, also in a shared mesh's data/ (3770): SQLite gives its -wal and -shm files the database's mode.
  closeSync(openSync(path, "a", 0o600));
  return DurableStore.open(path);
}

/**
 * Runs one actor instance as this process: loads the module's definition, joins the mesh
 * through the supervisor's control socket, listens on its own socket, runs init, reports
 * ready and then heartbeats. It exits when the supervisor goes away (no orphans) and stops
 * cleanly on SIGTERM. SIGINT is left to the supervisor: a Ctrl-C in the terminal reaches the
 * whole process group, and the supervisor stops its children in order.
 */
export async function runActorHost(options: ActorHostOptions): Promise<void> {
  // Ms since this process started (Bun's performance clock starts with the process): Bun's
  // own start-up plus loading the host's code. The ready line reports it with the later steps.
  const loaded = performance.now();
  const address = actorAddress(options.name, options.instance, options.pool);
  const log = createLogger({ actor: address, pid: process.pid });
  // Modules may keep files next to the mesh (facts, sandboxes): they find it here.
  process.env.HERMES_MESH_DIR = options.dir;
  // The registration secret is for this process alone: nothing it spawns inherits it.
  const spawnSecret = process.env.HERMES_SPAWN_SECRET ?? "";
  delete process.env.HERMES_SPAWN_SECRET;
  const definition = await loadDefinition(options.module);
  // console.log, not process.stdout.write: Bun builds process.stdout on first use, about 6 ms.
  const report: StartupReport = { origin: performance.timeOrigin, loaded, ...(options.assignedAt !== undefined && { assigned: options.assignedAt }), imported: performance.now() };
  console.log(`hermes-mesh:loaded ${JSON.stringify(report)}`);
  const durable = options.durable || definition.durable ? await openDurableStore(options) : undefined;
  // An external member of a mesh shared with a group is another user maybe: the core's gateway reads its log through the group.
  const shared = options.external !== undefined && socketGroupFor(clientSocketPath(options.dir, address)) !== undefined;
  const events = options.events === false ? undefined : new EventLog(join(options.dir, "logs", `${address.replace("#", ".")}.jsonl`), { actor: address }, { ...(shared && { mode: AccessMode.SHARED_LOG }) });
  const runtime: ActorRuntime<unknown> = new ActorRuntime(definition, {
    name: options.name,
    instance: options.instance,
    address,
    log,
    ...(options.concurrency !== undefined && { concurrency: options.concurrency }),
    ...(durable && { durable }),
    ...(events && { events }),
  });
  let member: MeshMember;
  try {
    member = await joinMesh({
      kind: "actor",
      dir: options.dir,
      address,
      spawnSecret,
      ...(options.external && { external: options.external }),
      capabilities: definition.capabilities ?? [],
      ...(definition.capabilityInfo && { capabilityInfo: definition.capabilityInfo }),
      subscriptions: definition.subscribe ?? [],
      ...(options.token !== undefined && { token: options.token }),
      ...(options.window !== undefined && { window: options.window }),
      ...runtime.nodeHandlers,
      init: (node) => runtime.start(node),
      heartbeat: () => {
        const load = runtime.load;
        return {
          queue_depth: load.queueDepth,
          in_flight: load.inFlight,
          handled: load.handled,
          // Every letter given up on, also those the node no longer keeps: the counter of /metrics.
          dead_letters: runtime.node.stats.deadLettersTotal,
          stats: { ...runtime.metrics.snapshot() },
        };
      },
      log,
    });
  } catch (error) {
    durable?.close();
    await events?.close();
    throw error;
  }
  // Ready: the supervisor heard it on the control socket already, and starts the next sibling
  // (OTP: start returns after init); the line is for anything watching the output.
  console.log("hermes-mesh:ready");

  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    try {
      await runtime.stop(options.shutdownMs ?? 5000);
      await member.close();
      await events?.close();
    } finally {
      process.exit(code);
    }
  };
  process.on("SIGTERM", () => void stop(0));
  // In the tree a Ctrl-C is the supervisor's to handle (it reaches the whole process group); an
  // external actor has no supervisor to stop it.
  process.on("SIGINT", () => (options.external ? void stop(0) : undefined));
  member.closed.then(() => {
    if (!stopping) log.warn("supervisor connection lost: exiting");
    void stop(1);
  });
}

async function loadDefinition(module: string): Promise<ActorDefinition<unknown>> {
  const loaded = await import(module);
  const definition = loaded.default as ActorDefinition<unknown> | undefined;
  if (!definition || typeof definition !== "object" || (!definition.onRequest && !definition.onEvent && !definition.init)) {
    throw new Error(`${module} has no actor definition as its default export (export default defineActor({...}))`);
  }
  return definition;
}
