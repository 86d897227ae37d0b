/**
 * A standby actor host's rehearsal: the path a start and its first messages take, run through
 * once on a private socket while the standby waits, so that the restart it is handed later is
 * not that code's first run. JavaScriptCore runs a function slowly the first few times
 * (interpreted, its caches empty): on a slow 2-core box a first dial and hello took 7 to 9 ms
 * and a first request 5 ms, the second 0.5 and the tenth 0.2 (docs/benchmarks.md, "Restart and
 * start-up"). A restart is all first times: the control connection, register, listen, init,
 * ready, the client's dial, the redelivered request. The rehearsal runs the same functions
 * (the same module instances as the actor will use) with an actor of its own: listen, accept,
 * hello both ways, requests and events through an ActorRuntime with its event log, a registry
 * snapshot, and a request over a bare RequestChannel as the control client makes them.
 * Nothing of it stays: its socket and log are in a private temporary directory, removed as soon
 * as both connections are up (the socket's path and the log's name are needed no more) and
 * again at the end.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../mesh/logger.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import { Registry, type RegistryEntry } from "../../mesh/registry.ts";
import { RequestChannel } from "../../mesh/requests.ts";
import { dial } from "../../mesh/socket-transport.ts";
import { EventLog } from "../observability/event-log.ts";
import { ActorRuntime } from "./actor-runtime.ts";
import { defineActor } from "./define-actor.ts";

/** Rounds of a request and an event: enough for the interpreter's first tiers, few enough to take a few ms. */
const ROUNDS = 10;
const TIMEOUT_MS = 2000;

const REHEARSAL_ACTOR = defineActor({
  init: () => ({ events: 0 }),
  onRequest: (request) => request.payload,
  onEvent: (_event, ctx) => {
    ctx.state.events++;
  },
});

/**
 * Runs the rehearsal and returns how many of its rounds ran; stops early (between rounds) once
 * `enough()` says so, as when the standby's assignment has come. Never throws: a rehearsal that
 * fails only leaves the code colder.
 *
 * @example
 * let assigned = false;
 * await rehearse(() => assigned); // 10
 */
export async function rehearse(enough: () => boolean = () => false): Promise<number> {
  if (enough()) return 0;
  let dir: string;
  try {
    dir = mkdtempSync(join(tmpdir(), "hermes-standby-"));
  } catch {
    return 0; // no temporary directory to rehearse in
  }
  const quiet = createLogger({}, () => {});
  const socket = join(dir, "rehearsal.sock");
  const registry = new Registry();
  registry.applyUpdate({ type: "snapshot", entries: [rehearsalEntry(socket)] });
  const pick = (candidates: readonly RegistryEntry[]) => candidates[0];
  const events = new EventLog(join(dir, "rehearsal.jsonl"), { actor: "rehearsal" });
  const actor = new ActorRuntime(REHEARSAL_ACTOR, { name: "rehearsal", instance: 0, address: "rehearsal", log: quiet, events, socketPath: socket, routes: registry, pick });
  let caller: MeshNode | undefined;
  let channel: RequestChannel | undefined;
  let rounds = 0;
  try {
    // Each step of the set-up is skipped once the assignment has come: the start waits for it.
    await actor.start();
    if (!enough()) caller = await MeshNode.start({ address: "rehearsal-caller", routes: registry, pick });
    if (caller && !enough()) channel = new RequestChannel(await dial({ path: socket }, { node: "rehearsal-control" }), "rehearsal-control");
    for (; caller && channel && rounds < ROUNDS && !enough(); rounds++) {
      await caller.request({ target_agent: "rehearsal" }, { round: rounds }, { timeoutMs: TIMEOUT_MS });
      await caller.send({ target_agent: "rehearsal" }, { round: rounds });
      await channel.request({ target_agent: "rehearsal" }, { round: rounds }, { timeoutMs: TIMEOUT_MS });
      // Both connections are up: the socket's path and the log's name are needed no more, and a
      // standby killed from here on leaves nothing behind.
      if (rounds === 0) rmSync(dir, { recursive: true, force: true });
    }
  } catch {
    // Only warmth is lost.
  } finally {
    await Promise.allSettled([channel?.connection.close(), caller?.close()]);
    await actor.stop(100).catch(() => {});
    await events.close().catch(() => {});
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Left to the system's cleaning of its temporary directory.
    }
  }
  return rounds;
}

function rehearsalEntry(socket: string): RegistryEntry {
  return {
    name: "rehearsal", instance: 0, address: "rehearsal", id: "rehearsal", socket, capabilities: [], subscriptions: [],
    health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now(), kind: "actor",
  };
}
