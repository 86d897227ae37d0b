/** Starts a real mesh (real actor processes) from YAML text for a test, and always stops it. */
import { expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connectMesh, type MeshClient } from "../../src/actor/connect-mesh.ts";
import { createLogger } from "../../mesh/logger.ts";
import { parseMeshFile } from "../../src/supervisor/mesh-file.ts";
import { startMesh, type GatewayOptions, type RunningMesh } from "../../src/supervisor/mesh-runtime.ts";
import type { SupervisorEvent } from "../../src/supervisor/supervisor-events.ts";
import { tempDir } from "../helpers.ts";

export const ACTORS = join(import.meta.dir, "../../actors");
export const FIXTURE_ACTORS = join(import.meta.dir, "../fixtures/actors");

export interface TestMesh extends AsyncDisposable {
  mesh: RunningMesh;
  dir: string;
  events: SupervisorEvent[];
  output: string[];
  /** The supervisor's log lines (JSON). */
  log: string[];
  /** A connected client, closed with the mesh. */
  client(): Promise<MeshClient>;
  /** The pid of an instance, from the registry. */
  pid(address: string): number;
}

/**
 * `yaml` may use {ACTORS} and {FIXTURES} for the module directories; `onEvent` sees each
 * supervisor event as it happens (the start is still going on), `startUpdateHoldMs` is passed on.
 */
export async function startTestMesh(
  yaml: string,
  options: { gateway?: GatewayOptions; onEvent?: (event: SupervisorEvent, dir: string) => void; startUpdateHoldMs?: number } = {},
): Promise<TestMesh> {
  const dir = tempDir("hm-mesh-");
  const file = join(dir.path, "mesh.yaml");
  writeFileSync(file, yaml.replaceAll("{ACTORS}", ACTORS).replaceAll("{FIXTURES}", FIXTURE_ACTORS));
  const events: SupervisorEvent[] = [];
  const output: string[] = [];
  const clients: MeshClient[] = [];
  const logLines: string[] = [];
  let mesh: RunningMesh;
  try {
    const runDir = join(dir.path, "run");
    mesh = await startMesh(parseMeshFile(await Bun.file(file).text(), file), {
      dir: runDir,
      log: createLogger({ component: "supervisor" }, (line) => { logLines.push(line); if (process.env.HM_DEBUG) console.error(line); }),
      onEvent: (event) => {
        events.push(event);
        options.onEvent?.(event, runDir);
      },
      ...(options.startUpdateHoldMs !== undefined && { startUpdateHoldMs: options.startUpdateHoldMs }),
      onOutput: (address, line) => output.push(`[${address}] ${line}`),
      gateway: options.gateway ?? false,
    });
  } catch (error) {
    dir[Symbol.dispose]();
    // What the actors printed tells why a start failed (a Deno permission, a syntax error).
    if (error instanceof Error) Object.assign(error, { output });
    throw error;
  }
  return {
    mesh,
    dir: mesh.dir,
    events,
    output,
    log: logLines,
    async client() {
      const client = await connectMesh({ dir: mesh.dir, name: "test" });
      clients.push(client);
      return client;
    },
    pid(address) {
      const pid = mesh.registry.byAddress(address)?.pid;
      if (!pid) throw new Error(`${address} has no pid`);
      return pid;
    },
    async [Symbol.asyncDispose]() {
      await Promise.allSettled(clients.map((c) => c.close()));
      await stopMeshForGood(mesh);
      dir[Symbol.dispose]();
    },
  };
}

/** Stops a mesh and, whatever happened in the test, leaves no actor process of it running. */
export async function stopMeshForGood(mesh: RunningMesh): Promise<void> {
  // Only the tree's own processes: an external member's pid is whatever it reported, possibly
  // a pid in another PID namespace (a container's 1), never this mesh's to signal.
  const pids = mesh.registry.snapshot().filter((e) => !e.external).map((e) => e.pid).filter((p): p is number => p !== undefined);
  await mesh.stop().catch(() => {});
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone, as it should be.
    }
  }
}

/**
 * Load for the kill tests: requests `{ key: 0 … total-1 }` to `target` in batches of `batch`
 * at once; `answered()` counts the answers so far, `done` resolves when every one is answered.
 */
export function requestKeys(client: MeshClient, target: string, total: number, batch: number): { answered: () => number; done: Promise<void> } {
  let answered = 0;
  const done = (async () => {
    for (let from = 0; from < total; from += batch) {
      await Promise.all(Array.from({ length: Math.min(batch, total - from) }, (_, i) => client.request(target, { key: from + i }, { timeoutMs: 60_000 }).then(() => answered++)));
    }
  })();
  return { answered: () => answered, done };
}

/** Checks that the ledger actor `target` (test/fixtures/actors/ledger.ts) handled each key 0 … total-1 exactly once. */
export async function expectHandledOnce(client: MeshClient, target: string, total: number): Promise<void> {
  const counts = (await client.request(target, { op: "counts" }, { timeoutMs: 20_000 })).payload as Record<string, number>;
  expect(Object.keys(counts).map(Number).sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, i) => i));
  expect(Object.entries(counts).filter(([, n]) => n !== 1)).toEqual([]);
}
