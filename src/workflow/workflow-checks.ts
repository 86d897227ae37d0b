import { mappingPaths, type Mapping } from "./input-mapping.ts";
import { formatPath, PATH_ROOTS, type PathSegment } from "./path-expression.ts";
import { FLOW, type WorkflowNode } from "./workflow-definition.ts";
import type { WorkflowGraph } from "./workflow-graph.ts";
import type { WorkflowFile } from "./workflow-schema.ts";
import type { YamlPath } from "../supervisor/yaml-source.ts";

/** Reports one problem at a key path, naming the node concerned. */
export type Report = (path: YamlPath, node: string | undefined, message: string, atKey?: boolean) => void;

const NODE_FIELDS = ["result", "status", "error", "attempts", "round"];

/**
 * The checks zod cannot make alone, each reported where it is in the file: edges to unknown
 * nodes, duplicate edges, cycles, orphan and unreachable nodes, failure branches that are not
 * proper branches, send-back targets that are not upstream, and paths that read nodes which
 * may not have run yet.
 *
 * @example
 * checkStructure(file, nodes, graph, output, report); // report(["edges", 2, "to"], "b", 'edge to unknown node "c"')
 */
export function checkStructure(file: WorkflowFile, nodes: Map<string, WorkflowNode>, graph: WorkflowGraph, output: Mapping | undefined, report: Report): void {
  const ids = new Set(nodes.keys());
  const seenEdges = new Map<string, number>();
  file.edges.forEach((edge, i) => {
    for (const end of ["from", "to"] as const) {
      if (!ids.has(edge[end])) report(["edges", i, end], edge.from, `edge ${end === "from" ? "from" : "to"} unknown node "${edge[end]}" (nodes: ${[...ids].join(", ")})`);
    }
    const key = `${edge.from}\u0000${edge.to}`;
    if (seenEdges.has(key)) report(["edges", i], edge.from, `duplicate edge ${edge.from} → ${edge.to} (first at edges[${seenEdges.get(key)}])`);
    else seenEdges.set(key, i);
  });

  const cycle = graph.findCycle();
  if (cycle) {
    const [from, to] = cycle.slice(-2) as [string, string];
    const at = file.edges.findIndex((e) => e.from === from && e.to === to);
    report(["edges", at], cycle[0], `cycle: ${cycle.join(" → ")} (a workflow is a DAG; use send_back on a node to send work back)`);
  }

  // Failure branches: a node named by an on_failure stands in for one node (or the flow) and has no edges.
  const handledBy = new Map<string, string>();
  const failureRefs: Array<{ owner: string; target: string; path: YamlPath }> = [];
  for (const node of nodes.values()) if (node.onFailure) failureRefs.push({ owner: node.id, target: node.onFailure, path: ["nodes", node.index, "on_failure"] });
  if (file.on_failure) failureRefs.push({ owner: FLOW, target: file.on_failure, path: ["on_failure"] });
  for (const { owner, target, path } of failureRefs) {
    const who = owner === FLOW ? undefined : owner;
    if (!ids.has(target)) report(path, who, `on_failure names unknown node "${target}"`);
    else if (target === owner) report(path, who, "a node cannot be its own on_failure");
    else if (handledBy.has(target)) report(path, who, `node "${target}" is already the on_failure of ${handledBy.get(target) === FLOW ? "the flow" : `"${handledBy.get(target)}"`} (one failure branch per node)`);
    else if (!graph.isolated(target)) report(["nodes", nodes.get(target)!.index, "id"], target, `on_failure node "${target}" cannot have edges: it stands in for ${owner === FLOW ? "the failed flow" : `"${owner}"`}`);
    else {
      handledBy.set(target, owner);
      nodes.get(target)!.handles = owner;
    }
  }
  // A chain of fallbacks must end: a → b → a would never finish. Reported once, at its first node.
  for (const start of nodes.values()) {
    const chain = [start.id];
    for (let next = start.onFailure; next && nodes.has(next); next = nodes.get(next)!.onFailure) {
      if (chain.includes(next)) {
        const first = Math.min(...chain.slice(chain.indexOf(next)).map((id) => nodes.get(id)!.index));
        if (next === start.id && first === start.index) report(["nodes", start.index, "on_failure"], start.id, `on_failure cycle: ${[...chain, next].join(" → ")}`);
        break;
      }
      chain.push(next);
    }
  }

  // Orphans and unreachable parts, among the regular nodes (failure branches are isolated on purpose).
  const regular = [...nodes.values()].filter((n) => !handledBy.has(n.id));
  if (regular.length > 1) {
    for (const node of regular) {
      if (graph.isolated(node.id)) report(["nodes", node.index, "id"], node.id, "orphan node: no edge leads to or from it (connect it, or name it in an on_failure)");
    }
    const parts = graph.components().filter((part) => part.length > 1 && !handledBy.has(part[0]!));
    for (const part of parts.slice(1)) {
      for (const id of part) {
        report(["nodes", nodes.get(id)!.index, "id"], id, `unreachable: not connected to the flow that starts at "${parts[0]![0]}" (nodes ${part.join(", ")} form a separate graph)`);
      }
    }
  }

  for (const node of nodes.values()) checkNode(node, nodes, graph, report);
  const outputs = output ? mappingPaths(output).map((p) => ({ at: ["output", ...p.at], segments: p.segments })) : [];
  checkPaths(outputs, undefined, "all", report);
}

function checkNode(node: WorkflowNode, nodes: Map<string, WorkflowNode>, graph: WorkflowGraph, report: Report): void {
  const base: YamlPath = ["nodes", node.index];
  if (node.sendBack) {
    const upstream = graph.ancestors(node.id);
    node.sendBack.to.forEach((id, i) => {
      if (!nodes.has(id)) report([...base, "send_back", "to", i], node.id, `send_back to unknown node "${id}"`);
      else if (!upstream.has(id)) report([...base, "send_back", "to", i], node.id, `send_back to "${id}", which is not upstream of "${node.id}"`);
    });
    for (const segments of node.sendBack.when.paths) checkRoot(segments, [...base, "send_back", "when"], node, report, true);
  }
  // Which node results a path here may read: those finished before this node can start.
  const handled = node.handles;
  const readable: Set<string> | "all" =
    handled === FLOW ? "all" : handled ? new Set([handled, ...graph.ancestors(handled)]) : graph.ancestors(node.id);
  const paths: Array<{ at: YamlPath; segments: PathSegment[] }> = [];
  if (node.input) for (const p of mappingPaths(node.input)) paths.push({ at: [...base, "input", ...p.at], segments: p.segments });
  if (node.when) for (const segments of node.when.paths) paths.push({ at: [...base, "when"], segments });
  checkPaths(paths, node, readable, report);
}

function checkPaths(paths: Array<{ at: YamlPath; segments: PathSegment[] }>, node: WorkflowNode | undefined, readable: Set<string> | "all", report: Report): void {
  for (const { at, segments } of paths) {
    if (!checkRoot(segments, at, node, report, false)) continue;
    if (segments[0] !== "nodes") continue;
    const target = segments[1];
    const text = formatPath(segments);
    if (typeof target !== "string") report(at, node?.id, `${text}: name a node after $.nodes`);
    else if (readable !== "all" && !readable.has(target)) {
      report(at, node?.id, `${text} reads node "${target}", which is not upstream of "${node!.id}" (its result may not exist yet: add an edge)`);
    } else if (segments.length > 2 && !NODE_FIELDS.includes(String(segments[2]))) {
      report(at, node?.id, `${text}: a node has ${NODE_FIELDS.join(", ")}`);
    }
  }
}

/** The root of a path must exist where it is used: `$.result` in send_back only, `$.error` in failure branches. */
function checkRoot(segments: PathSegment[], at: YamlPath, node: WorkflowNode | undefined, report: Report, inSendBack: boolean): boolean {
  const root = segments[0];
  const text = formatPath(segments);
  if (root === undefined) return true;
  if (!(PATH_ROOTS as readonly PathSegment[]).includes(root)) {
    report(at, node?.id, `${text}: unknown root (expected one of ${PATH_ROOTS.map((r) => `$.${r}`).join(", ")})`);
    return false;
  }
  if (root === "result" && !inSendBack) {
    report(at, node?.id, `${text}: $.result is only set in send_back (use $.nodes.<id>.result)`);
    return false;
  }
  if (root === "error" && node && !node.handles) {
    report(at, node.id, `${text}: $.error is only set in an on_failure node`);
    return false;
  }
  return true;
}
