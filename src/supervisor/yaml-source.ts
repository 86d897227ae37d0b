import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from "yaml";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

// The one place that turns YAML text into data with positions kept, and problems into
// `file:line:col: path: message`. Mesh files (./mesh-file.ts) and workflow files
// (../workflow/workflow-loader.ts) both load through it, so their messages read alike.

/** A key path into parsed YAML: map keys and list indexes. */
export type YamlPath = ReadonlyArray<string | number>;

/** One problem in a YAML file, located (1-based line and column). */
export interface SourceIssue {
  line: number;
  col: number;
  /** Where in the data, as text (`nodes[2].timeout_ms`); empty for the file as a whole. */
  path: string;
  /** The workflow node concerned, when there is one. */
  node?: string;
  message: string;
}

/**
 * YAML text with positions kept: the data as plain JS, and where any key path sits in the text,
 * so every problem a loader finds can name its line and column.
 *
 * @example
 * const src = YamlSource.parse("name: a\nnodes:\n  - id: x\n", "workflow file");
 * src.data; // { name: "a", nodes: [{ id: "x" }] }
 * src.where(["nodes", 0, "id"]); // { line: 3, col: 9 }
 */
export class YamlSource {
  /** The data, or undefined when there are syntax issues. */
  readonly data: unknown;
  /** YAML syntax errors, already located; the data is unusable unless this is empty. */
  readonly syntaxIssues: SourceIssue[];
  #doc: Document;
  #lines: LineCounter;

  private constructor(doc: Document, lines: LineCounter, data: unknown, syntaxIssues: SourceIssue[]) {
    this.#doc = doc;
    this.#lines = lines;
    this.data = data;
    this.syntaxIssues = syntaxIssues;
  }

  /** Parses `text`; `what` names the kind of file in messages ("mesh file", "workflow file"). */
  static parse(text: string, what: string): YamlSource {
    const lines = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
    const issues: SourceIssue[] = [...doc.errors, ...doc.warnings].map((e) => ({
      ...lines.linePos(e.pos[0]),
      path: "",
      message: `invalid YAML: ${e.code === "MULTIPLE_DOCS" ? `a ${what} holds one YAML document` : e.message.split("\n")[0]}`,
    }));
    let data: unknown;
    if (issues.length === 0) {
      try {
        data = doc.toJS(); // throws on alias bombs (more aliases than yaml's maxAliasCount)
      } catch (error) {
        issues.push({ line: 1, col: 1, path: "", message: `invalid YAML: ${(error as Error).message}` });
      }
    }
    return new YamlSource(doc, lines, data, issues);
  }

  /**
   * The text a scalar at the top level was written as, e.g. "1.0" for `version: 1.0`, which
   * YAML reads as the number 1; undefined when `key` holds no scalar.
   */
  scalarText(key: string): string | undefined {
    const node = isMap(this.#doc.contents) ? this.#doc.contents.get(key, true) : undefined;
    return isScalar(node) && typeof node.source === "string" ? node.source : undefined;
  }

  /**
   * Line and column of the value at `path` (or of its key with `atKey`), else of the nearest
   * existing ancestor: a missing key points at its parent map.
   */
  where(path: YamlPath, atKey = false): { line: number; col: number } {
    let node: unknown = this.#doc.contents;
    let offset = rangeStart(node) ?? 0;
    for (const segment of path) {
      let keyNode: unknown;
      let next: unknown;
      if (isMap(node)) {
        const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === segment);
        if (!pair) break;
        [keyNode, next] = [pair.key, pair.value];
      } else if (isSeq(node) && typeof segment === "number" && segment < node.items.length) {
        next = node.items[segment];
      } else break;
      // An empty value (`timeout_ms:`) has no node of its own: point at its key.
      offset = rangeStart(atKey ? keyNode : next) ?? rangeStart(keyNode) ?? offset;
      node = next;
    }
    return this.#lines.linePos(offset);
  }
}

/**
 * The value at `path` in parsed data, or undefined when the path leads nowhere.
 *
 * @example
 * valueAt({ nodes: [{ id: "a" }] }, ["nodes", 0, "id"]); // "a"
 */
export function valueAt(data: unknown, path: YamlPath): unknown {
  let value = data;
  for (const segment of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}

/**
 * A key path as text: `nodes[2].timeout_ms`; empty for the top level.
 *
 * @example
 * formatYamlPath(["nodes", 2, "retries", "max"]); // "nodes[2].retries.max"
 * formatYamlPath(["env", "1X"]); // 'env["1X"]'
 */
export function formatYamlPath(path: YamlPath): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += /^[A-Za-z_][A-Za-z0-9_-]*$/.test(segment) ? `${out ? "." : ""}${segment}` : `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/**
 * How a value looks in a message: `"two"`, `a list`, `a map`.
 *
 * @example
 * describeValue([1]); // "a list"
 */
export function describeValue(value: unknown): string {
  if (Array.isArray(value)) return "a list";
  if (value !== null && typeof value === "object") return "a map";
  return value === null ? "an empty value" : JSON.stringify(value);
}

/**
 * A schema message completed with what the file holds there: a missing value becomes
 * "missing required key (...)", an "expected ..." message gets ", got <value>", others stay.
 *
 * @example
 * issueMessage("expected an integer from 1 to 64", "two"); // 'expected an integer from 1 to 64, got "two"'
 * issueMessage("expected a name", undefined); // "missing required key (expected a name)"
 */
export function issueMessage(message: string, value: unknown): string {
  if (value === undefined) return `missing required key (${message})`;
  return message.startsWith("expected") ? `${message}, got ${describeValue(value)}` : message;
}

/**
 * The error a bad YAML file throws: code 2, every issue on its own line
 * (`file:line:col: node "id": path: message`), sorted by position, duplicates dropped.
 * Sorts `issues` in place; they come back in the error's `issues` field.
 *
 * @example
 * sourceError("w.yaml", [{ line: 3, col: 5, path: "nodes[0]", node: "a", message: "..." }]).message;
 * // 'w.yaml:3:5: node "a": nodes[0]: ...'
 */
export function sourceError(fileName: string, issues: SourceIssue[]): HermesError {
  issues.sort((a, b) => a.line - b.line || a.col - b.col);
  const lines = [...new Set(issues.map((i) => `${fileName}:${i.line}:${i.col}: ${i.node !== undefined ? `node "${i.node}": ` : ""}${i.path ? `${i.path}: ` : ""}${i.message}`))];
  return new HermesError(ErrorCode.INVALID_REQUEST, lines.join("\n"), {
    reason: `${issues.length === 1 ? "1 problem" : `${issues.length} problems`} in ${fileName}`,
    file: fileName,
    issues,
  });
}

function rangeStart(node: unknown): number | undefined {
  return (node as { range?: [number, number, number] } | null | undefined)?.range?.[0];
}
