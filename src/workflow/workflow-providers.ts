import { type MeshFile, listActors } from "../supervisor/mesh-file.ts";
import type { Workflow } from "./workflow-definition.ts";
import { workflowError } from "./workflow-loader.ts";
import type { SourceIssue } from "../supervisor/yaml-source.ts";

/** What a mesh offers: which capabilities and which actor names or addresses it can route to. */
export interface Providers {
  /** Where the answer comes from, for messages ("the running mesh", "mesh.yaml"). */
  where: string;
  hasCapability(capability: string): boolean;
  hasTarget(target: string): boolean;
  /** Capabilities known, listed in messages. */
  capabilities(): string[];
}

/**
 * Checks that every node's capability or target is provided; throws the located error
 * (code 2, one line per node) otherwise.
 *
 * @example
 * checkProviders(workflow, meshFileProviders(loadMeshFile("actors/mesh.yaml"), "actors/mesh.yaml"));
 * // w.yaml:7:17: node "image": capability "image_generation" is provided by no actor in actors/mesh.yaml (known: echo, calculator, ...)
 */
export function checkProviders(workflow: Workflow, providers: Providers): void {
  const issues: SourceIssue[] = [];
  for (const node of workflow.nodes.values()) {
    const { capability, target_agent } = node.route;
    if (capability !== undefined && !providers.hasCapability(capability)) {
      issues.push({
        ...workflow.locate(node.id, "capability"),
        path: `nodes[${node.index}].capability`,
        node: node.id,
        message: `capability "${capability}" is provided by no actor in ${providers.where} (known: ${providers.capabilities().join(", ") || "none"})`,
      });
    }
    if (target_agent !== undefined && !providers.hasTarget(target_agent)) {
      issues.push({ ...workflow.locate(node.id, "target"), path: `nodes[${node.index}].target`, node: node.id, message: `target "${target_agent}" is no actor in ${providers.where}` });
    }
  }
  if (issues.length > 0) throw workflowError(workflow.file, issues);
}

/**
 * The providers a mesh file declares: its actors' names (and `name#i` addresses) and the
 * capabilities given in the file, plus those their modules declare when `moduleCapabilities`
 * supplies them (see `readModuleCapabilities`).
 *
 * @example
 * const providers = meshFileProviders(loadMeshFile(path), path, await readModuleCapabilities(loadMeshFile(path)));
 */
export function meshFileProviders(meshFile: MeshFile, where: string, moduleCapabilities: Map<string, readonly string[]> = new Map()): Providers {
  const actors = listActors(meshFile);
  const capabilities = new Set<string>();
  const targets = new Set<string>();
  for (const actor of actors) {
    for (const c of [...actor.capabilities, ...(moduleCapabilities.get(actor.module) ?? [])]) capabilities.add(c);
    targets.add(actor.actor);
    for (let i = 0; i < actor.pool; i++) targets.add(`${actor.actor}#${i}`);
  }
  return {
    where,
    hasCapability: (c) => capabilities.has(c),
    hasTarget: (t) => targets.has(t),
    capabilities: () => [...capabilities].sort(),
  };
}

/**
 * The capabilities each actor module declares in its definition (modules that fail to import
 * are skipped: the mesh file's own list still counts).
 *
 * @example
 * const byModule = await readModuleCapabilities(meshFile); // Map { "/abs/actors/echo.ts" => ["echo"] }
 */
export async function readModuleCapabilities(meshFile: MeshFile): Promise<Map<string, readonly string[]>> {
  const out = new Map<string, readonly string[]>();
  for (const actor of listActors(meshFile)) {
    if (out.has(actor.module)) continue;
    try {
      const definition = (await import(actor.module)).default as { capabilities?: readonly string[] } | undefined;
      out.set(actor.module, definition?.capabilities ?? []);
    } catch {
      out.set(actor.module, []);
    }
  }
  return out;
}
