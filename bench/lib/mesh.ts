/**
 * Real meshes for the actor scenarios: `startMesh` from YAML text in a private temporary
 * directory, a silent logger, and every actor process killed however the harness ends (the
 * registry's pids are read at exit time, so restarted instances are covered too). Supervisor
 * events and registry updates are timestamped (performance.now(), ms) as this process sees
 * them: the supervisor runs here.
 */
import { join } from "node:path";
import { connectMesh, type MeshClient } from "../../src/actor/connect-mesh.ts";
import { createLogger } from "../../mesh/logger.ts";
import { parseMeshFile } from "../../src/supervisor/mesh-file.ts";
import { startMesh, type RunningMesh } from "../../src/supervisor/mesh-runtime.ts";
import type { SupervisorEvent } from "../../src/supervisor/supervisor-events.ts";
import type { RegistryUpdate } from "../../mesh/registry.ts";
import { onExit } from "./cleanup.ts";
import { tempDir } from "./scenario.ts";

/** The repository's actors/ and the bench-only bench/actors/, for module paths in YAML. */
export const ACTORS_DIR = join(import.meta.dir, "../../actors");
export const BENCH_ACTORS_DIR = join(import.meta.dir, "../actors");

/** A supervisor event or registry update with the time this process saw it. */
export type MeshMark =
  | { at: number; kind: "event"; event: SupervisorEvent }
  | { at: number; kind: "registry"; update: RegistryUpdate };

export interface BenchMesh extends AsyncDisposable {
  mesh: RunningMesh;
  /** Socket directory of the mesh. */
  dir: string;
  /** Lines the actors printed (stdout and stderr), with their address; kept for failures. */
  output: string[];
  /** Calls `listener` with every supervisor event and registry update from now on; returns an unsubscribe. */
  watch(listener: (mark: MeshMark) => void): () => void;
  /** A connected client, closed with the mesh. */
  client(): Promise<MeshClient>;
  /** The current pid of an instance (from the registry); throws when it has none. */
  pid(address: string): number;
  /** Pids of every running actor instance. */
  pids(): number[];
}

/**
 * Starts a mesh from YAML text; `{ACTORS}` and `{BENCH_ACTORS}` in the text stand for the
 * module directories. Resolves once every actor is ready (children start in order).
 * `onMark` is a first `watch` listener, from before the start; `startUpdateHoldMs` is startMesh's.
 *
 * @example
 * await using m = await startBenchMesh(`mesh: { name: one }\nsupervisor:\n  children:\n    - { actor: echo, module: "{ACTORS}/echo.ts" }`);
 * const client = await m.client();
 */
export async function startBenchMesh(yaml: string, options: { onMark?: (mark: MeshMark) => void; startUpdateHoldMs?: number } = {}): Promise<BenchMesh> {
  const dir = tempDir();
  const text = yaml.replaceAll("{ACTORS}", ACTORS_DIR).replaceAll("{BENCH_ACTORS}", BENCH_ACTORS_DIR);
  // onMark sees the start-up too (supervisor events only: the registry is not ours until startMesh resolves).
  const listeners = new Set<(mark: MeshMark) => void>(options.onMark ? [options.onMark] : []);
  const emit = (mark: MeshMark) => {
    for (const listener of listeners) listener(mark);
  };
  const output: string[] = [];
  let mesh: RunningMesh | undefined;
  const killAll = () => {
    for (const entry of mesh?.registry.snapshot() ?? []) {
      if (entry.pid === undefined) continue;
      try {
        process.kill(entry.pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    }
  };
  const forget = onExit(killAll);
  try {
    mesh = await startMesh(parseMeshFile(text, join(dir.path, "mesh.yaml")), {
      dir: join(dir.path, "run"),
      log: createLogger({ component: "bench" }, () => {}),
      onEvent: (event) => emit({ at: performance.now(), kind: "event", event }),
      onOutput: (address, line) => {
        if (output.length < 1000) output.push(`[${address}] ${line}`);
      },
      ...(options.startUpdateHoldMs !== undefined && { startUpdateHoldMs: options.startUpdateHoldMs }),
    });
  } catch (error) {
    killAll();
    forget();
    dir[Symbol.dispose]();
    throw error;
  }
  const running = mesh;
  running.registry.onUpdate((update) => emit({ at: performance.now(), kind: "registry", update }));
  const clients: MeshClient[] = [];
  return {
    mesh: running,
    dir: running.dir,
    output,
    watch(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async client() {
      const client = await connectMesh({ dir: running.dir, name: "bench" });
      clients.push(client);
      return client;
    },
    pid(address) {
      const pid = running.registry.byAddress(address)?.pid;
      if (!pid) throw new Error(`${address} has no pid (health ${running.registry.byAddress(address)?.health ?? "unknown"})`);
      return pid;
    },
    pids() {
      // Clients (connectMesh) are registry entries too, but without a pid.
      return running.registry.snapshot().flatMap((e) => (e.pid !== undefined ? [e.pid] : []));
    },
    async [Symbol.asyncDispose]() {
      listeners.clear();
      await Promise.allSettled(clients.map((c) => c.close()));
      await running.stop().catch(() => {});
      killAll(); // whatever stop() left behind
      forget();
      dir[Symbol.dispose]();
    },
  };
}
