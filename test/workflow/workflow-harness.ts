/** A real mesh with the demo workflow actors and the orchestrator, and helpers to run workflows on it. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { MeshClient } from "../../src/actor/connect-mesh.ts";
import type { Payload } from "../../src/protocol/envelope.ts";
import { HermesError } from "../../src/protocol/hermes-error.ts";
import { ACTORS, startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";

export const SEED_FILE = join(ACTORS, "workflows/image-caption.yaml");
export const SEED = readFileSync(SEED_FILE, "utf8");

/** The demo workflow actors and a durable orchestrator; restarts allowed (the crash tests kill it). */
export function startWorkflowMesh(name: string): Promise<TestMesh> {
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
    - actor: caption-gen
      module: {ACTORS}/caption-gen.ts
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

/** How many executions an actor started: in all, and for one run (its context_id), and how many were cancelled. */
export async function stats(client: MeshClient, actor: string, runId?: string): Promise<{ started: number; cancelled: number; executions: number }> {
  const reply = await client.request(actor, { op: "stats", ...(runId && { context_id: runId }) }, { timeoutMs: 5000 });
  return reply.payload as { started: number; cancelled: number; executions: number };
}

/** The run id a run's first progress message names. */
export function runIdOf(result: Pick<RunResult, "progress">): string {
  const first = result.progress.find((p) => p.type === "run");
  if (!first) throw new Error("the run sent no progress");
  return first.run_id as string;
}
