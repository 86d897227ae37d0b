import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from "yaml";

/** A key path into parsed YAML: map keys and list indexes. */
export type YamlPath = ReadonlyArray<string | number>;

/** One problem in a YAML file, located (1-based line and column). */
export interface SourceIssue {
  line: number;
  col: number;
  /** Where in the data, as text (`nodes[2].timeout_ms`). */
  path: string;
  /** The workflow node concerned, when there is one. */
  node?: string;
  message: string;
}

/**
 * YAML text with positions kept: the data as plain JS, and where any key path sits in the text,
 * so every problem the loader finds can name its line and column (the approach of
 * src/supervisor/mesh-file.ts, here for workflow files).
 *
 * @example
 * const src = YamlSource.parse("name: a\nnodes:\n  - id: x\n", "flow.yaml");
 * src.where(["nodes", 0, "id"]); // { line: 3, col: 9 }
 */
export class YamlSource {
  readonly data: unknown;
  /** YAML syntax errors, already located. */
  readonly syntaxIssues: SourceIssue[];
  #doc: Document;
  #lines: LineCounter;

  private constructor(doc: Document, lines: LineCounter, data: unknown, syntaxIssues: SourceIssue[]) {
    this.#doc = doc;
    this.#lines = lines;
    this.data = data;
    this.syntaxIssues = syntaxIssues;
  }

  static parse(text: string): YamlSource {
    const lines = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
    const issues: SourceIssue[] = [...doc.errors, ...doc.warnings].map((e) => ({
      ...lines.linePos(e.pos[0]),
      path: "",
      message: `invalid YAML: ${e.code === "MULTIPLE_DOCS" ? "a workflow file holds one YAML document" : e.message.split("\n")[0]}`,
    }));
    let data: unknown;
    if (issues.length === 0) {
      try {
        data = doc.toJS(); // throws on alias bombs
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

  /** Line and column of the value at `path` (or of its key with `atKey`), else of the nearest ancestor. */
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
 * A key path as text: `nodes[2].timeout_ms`.
 *
 * @example
 * formatYamlPath(["nodes", 2, "retries", "max"]); // "nodes[2].retries.max"
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

function rangeStart(node: unknown): number | undefined {
  return (node as { range?: [number, number, number] } | null | undefined)?.range?.[0];
}
