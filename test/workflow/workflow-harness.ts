/** A real mesh with the demo workflow actors and the orchestrator, and helpers to run workflows on it. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { MeshClient } from "../../src/actor/connect-mesh.ts";
import type { Payload } from "../../mesh/envelope.ts";
import { HermesError } from "../../mesh/errors.ts";
import { ACTORS, startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";

export const SEED_FILE = join(ACTORS, "workflows/image-caption.yaml");
export const SEED = readFileSync(SEED_FILE, "utf8");

/**
 * The demo workflow actors (the generators a pool of `pool` instances) and a durable
 * orchestrator; restarts allowed (the crash tests kill it).
 */
export function startWorkflowMesh(name: string, pool = 1): Promise<TestMesh> {
  return startTestMesh(`
mesh:
  name: ${name}
supervisor:
  intensity: 20
  period_ms: 5000
  backoff: { initial_ms: 1, max_ms: 20 }
  children:
    - actor: image-gen
      module: {ACTORS}/image-gen.ts
      pool: ${pool}
    - actor: caption-gen
      module: {ACTORS}/caption-gen.ts
      pool: ${pool}
    - actor: validator
      module: {ACTORS}/validator.ts
    - actor: orchestrator
      module: {ACTORS}/orchestrator.ts
`);
}

/** A run's answer or its error, with every progress message it streamed. */
export interface RunResult {
  answer?: Payload;
  error?: HermesError;
  progress: Payload[];
}

/** Starts a run of `yaml` and resolves when it answers (or fails). `onProgress` sees each message as it comes. */
export async function runFlow(client: MeshClient, yaml: string, input: Payload, onProgress?: (p: Payload) => void, timeoutMs = 20_000): Promise<RunResult> {
  const progress: Payload[] = [];
  try {
    const reply = await client.request({ capability: "workflow" }, { workflow_yaml: yaml, file: "flow.yaml", input }, {
      timeoutMs,
      onProgress: (p) => {
        progress.push(p);
        onProgress?.(p);
      },
    });
    return { answer: reply.payload, progress };
  } catch (error) {
    return { error: HermesError.from(error), progress };
  }
}

/** How many executions an actor's instances started: in all, and for one run (its context_id), and how many were cancelled. */
export async function stats(client: MeshClient, actor: string, runId?: string): Promise<{ started: number; cancelled: number; executions: number }> {
  const total = { started: 0, cancelled: 0, executions: 0 };
  for (const { address } of client.registry.resolveTarget(actor)) {
    const one = (await client.request(address, { op: "stats", ...(runId && { context_id: runId }) }, { timeoutMs: 5000 })).payload;
    for (const key of ["started", "cancelled", "executions"] as const) total[key] += Number(one[key] ?? 0);
  }
  return total;
}

/** The run id a run's first progress message names. */
export function runIdOf(result: Pick<RunResult, "progress">): string {
  const first = result.progress.find((p) => p.type === "run");
  if (!first) throw new Error("the run sent no progress");
  return first.run_id as string;
}
