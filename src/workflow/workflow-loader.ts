import { readFileSync } from "node:fs";
import type { z } from "zod";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { describeValue, formatYamlPath, issueMessage, sourceError, valueAt, YamlSource, type SourceIssue, type YamlPath } from "../supervisor/yaml-source.ts";
import { compileMapping, type MappingIssue } from "./input-mapping.ts";
import { parsePath, PathSyntaxError } from "./path-expression.ts";
import { checkStructure } from "./workflow-checks.ts";
import type { Workflow, WorkflowNode } from "./workflow-definition.ts";
import { WorkflowGraph } from "./workflow-graph.ts";
import { retryPolicy, WorkflowFileSchema, type WorkflowFile } from "./workflow-schema.ts";
import { compileCondition, type CompiledCondition } from "./when-condition.ts";

/**
 * Reads and validates a workflow file. Throws HermesError code 2 listing every problem, each as
 * `file:line:col: node "id": path: message`.
 *
 * @example
 * const wf = loadWorkflow("actors/workflows/image-caption.yaml");
 * wf.order; // ["image", "caption", "validate", "placeholder_image"]
 */
export function loadWorkflow(path: string): Workflow {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new HermesError(ErrorCode.INVALID_REQUEST, `${path}: cannot read the workflow file (${reason})`, { reason, file: path });
  }
  return parseWorkflow(text, path);
}

/**
 * Validates workflow text; `fileName` names it in messages.
 *
 * @example
 * parseWorkflow("name: w\nversion: 1\nnodes:\n  - { id: a, capability: echo }\n", "w.yaml").nodes.size; // 1
 * // edges: [{ from: a, to: b }, { from: b, to: a }] throws "w.yaml:9:5: node \"a\": edges[1]: cycle: a → b → a ..."
 */
export function parseWorkflow(text: string, fileName: string): Workflow {
  const source = YamlSource.parse(text, "workflow file");
  if (source.syntaxIssues.length > 0) throw workflowError(fileName, source.syntaxIssues);
  const raw = source.data;
  const issues: SourceIssue[] = [];
  const nodeAt = (path: YamlPath): string | undefined => {
    if (path[0] !== "nodes" || typeof path[1] !== "number") return undefined;
    const id = (raw as { nodes?: Array<{ id?: unknown }> }).nodes?.[path[1]]?.id;
    return typeof id === "string" ? id : undefined;
  };
  const report = (path: YamlPath, node: string | undefined, message: string, atKey = false) =>
    issues.push({ ...source.where(path, atKey), path: formatYamlPath(path), ...(node !== undefined && { node }), message });

  const parsed = WorkflowFileSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    for (const issue of parsed.error.issues) reportZodIssue(issue, raw, nodeAt, report);
    throw workflowError(fileName, issues);
  }
  const file = parsed.data;
  const nodes = compileNodes(file, report);
  const graph = new WorkflowGraph([...nodes.keys()], file.edges);
  const outputIssues: MappingIssue[] = [];
  const output = file.output === undefined ? undefined : compileMapping(file.output, outputIssues);
  for (const issue of outputIssues) report(["output", ...issue.at], undefined, issue.message);
  checkStructure(file, nodes, graph, output, report);
  if (issues.length > 0) throw workflowError(fileName, issues);

  // Failure-branch nodes are isolated, so Kahn's order places them too.
  return {
    name: file.name,
    // As written: `version: 1.0` is "1.0", not the "1" its number would print as.
    version: typeof file.version === "number" ? (source.scalarText("version") ?? String(file.version)) : file.version,
    description: file.description,
    file: fileName,
    source: text,
    nodes,
    graph,
    order: graph.topologicalOrder(),
    output,
    onFailure: file.on_failure,
    locate: (id, key) => {
      const index = nodes.get(id)?.index;
      return index === undefined ? { line: 1, col: 1 } : source.where(key ? ["nodes", index, key] : ["nodes", index], false);
    },
  };
}

function compileNodes(file: WorkflowFile, report: (path: YamlPath, node: string | undefined, message: string, atKey?: boolean) => void): Map<string, WorkflowNode> {
  const nodes = new Map<string, WorkflowNode>();
  file.nodes.forEach((spec, index) => {
    const base: YamlPath = ["nodes", index];
    if (nodes.has(spec.id)) {
      report([...base, "id"], spec.id, `duplicate node id "${spec.id}" (first at nodes[${nodes.get(spec.id)!.index}])`);
      return;
    }
    if ((spec.capability === undefined) === (spec.target === undefined)) {
      report(base, spec.id, spec.capability === undefined ? "a node needs a capability or a target" : "a node has a capability or a target, not both");
    }
    const mappingIssues: MappingIssue[] = [];
    const input = spec.input === undefined ? undefined : compileMapping(spec.input, mappingIssues);
    for (const issue of mappingIssues) report([...base, "input", ...issue.at], spec.id, issue.message);
    if (input && input.kind !== "map" && input.kind !== "path") report([...base, "input"], spec.id, `input must be a map (or one path to a map), got ${describeValue(spec.input)}`);
    const condition = (text: string, at: YamlPath): CompiledCondition | undefined => {
      try {
        return compileCondition(text);
      } catch (error) {
        const position = error instanceof PathSyntaxError ? ` at position ${error.position + 1}` : "";
        report(at, spec.id, `bad condition${position}: ${(error as Error).message} in ${JSON.stringify(text)}`);
        return undefined;
      }
    };
    const when = spec.when === undefined ? undefined : condition(spec.when, [...base, "when"]);
    let sendBack: WorkflowNode["sendBack"];
    if (spec.send_back) {
      const sbWhen = condition(spec.send_back.when, [...base, "send_back", "when"]);
      let only: string[] | undefined;
      if (spec.send_back.only !== undefined) {
        try {
          only = parsePath(spec.send_back.only) as string[];
          if (only[0] !== "result") throw new Error("only reads this node's result: start it with $.result");
        } catch (error) {
          report([...base, "send_back", "only"], spec.id, `bad path: ${(error as Error).message}`);
        }
      }
      if (sbWhen) sendBack = { when: sbWhen, to: spec.send_back.to, only, maxRounds: spec.send_back.max_rounds };
    }
    nodes.set(spec.id, {
      id: spec.id,
      index,
      spec,
      route: spec.capability !== undefined ? { capability: spec.capability } : { target_agent: spec.target ?? "" },
      input,
      when,
      retry: retryPolicy(spec.retries),
      timeoutMs: spec.timeout_ms,
      ttlMs: spec.ttl_ms ?? spec.timeout_ms,
      onFailure: spec.on_failure,
      sendBack,
      handles: undefined,
    });
  });
  return nodes;
}

function reportZodIssue(
  issue: z.core.$ZodIssue,
  raw: unknown,
  nodeAt: (path: YamlPath) => string | undefined,
  report: (path: YamlPath, node: string | undefined, message: string, atKey?: boolean) => void,
): void {
  const path = issue.path as (string | number)[];
  if (issue.code === "unrecognized_keys") {
    for (const key of issue.keys) report([...path, key], nodeAt(path), `unknown key "${key}" ${issue.message.replace(/^unknown key /, "")}`, true);
    return;
  }
  report(path, nodeAt(path), issueMessage(issue.message, valueAt(raw, path)));
}

/**
 * The error a bad workflow file throws: code 2, every issue on its own line, sorted by position
 * (sourceError of ../supervisor/yaml-source.ts, the same format as mesh files).
 *
 * @example
 * workflowError("w.yaml", [{ line: 3, col: 5, path: "nodes[0]", node: "a", message: "..." }]).message;
 * // 'w.yaml:3:5: node "a": nodes[0]: ...'
 */
export function workflowError(fileName: string, issues: SourceIssue[]): HermesError {
  return sourceError(fileName, issues);
}
