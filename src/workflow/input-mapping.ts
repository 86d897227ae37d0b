import { parsePath, resolvePath, type PathSegment } from "./path-expression.ts";

/**
 * A node's `input`: the payload it sends, built from the run's data. Any string starting with
 * `$.` (or exactly `$`) is a path and is replaced by the value it names; maps and lists are
 * mapped item by item; everything else is taken literally. A path naming nothing leaves its
 * key out. `$$` at the start escapes a literal dollar: `"$$5"` is the text `"$5"`.
 *
 * @example
 * const mapping = compileMapping({ prompt: "$.input.prompt", image: "$.nodes.image.result.url", size: 512 });
 * applyMapping(mapping, { input: { prompt: "a fox" }, nodes: { image: { result: { url: "u" } } } });
 * // { prompt: "a fox", image: "u", size: 512 }
 */
export type Mapping =
  | { kind: "path"; segments: PathSegment[] }
  | { kind: "map"; entries: Array<[string, Mapping]> }
  | { kind: "list"; items: Mapping[] }
  | { kind: "literal"; value: unknown };

/** A mapping problem: where in the mapping (key path) and what. */
export interface MappingIssue {
  at: PathSegment[];
  message: string;
}

/**
 * Compiles a mapping, collecting bad paths as issues rather than stopping at the first.
 *
 * @example
 * const issues: MappingIssue[] = [];
 * compileMapping({ a: "$.input." }, issues); // issues[0].message: "expected a name after '.'"
 */
export function compileMapping(raw: unknown, issues: MappingIssue[] = [], at: PathSegment[] = []): Mapping {
  if (typeof raw === "string") {
    if (raw.startsWith("$$")) return { kind: "literal", value: raw.slice(1) };
    if (raw === "$" || raw.startsWith("$.") || raw.startsWith("$[")) {
      try {
        return { kind: "path", segments: parsePath(raw) };
      } catch (error) {
        issues.push({ at, message: `bad path ${JSON.stringify(raw)}: ${(error as Error).message}` });
        return { kind: "literal", value: undefined };
      }
    }
    return { kind: "literal", value: raw };
  }
  if (Array.isArray(raw)) return { kind: "list", items: raw.map((item, i) => compileMapping(item, issues, [...at, i])) };
  if (raw !== null && typeof raw === "object") {
    return { kind: "map", entries: Object.entries(raw).map(([key, value]) => [key, compileMapping(value, issues, [...at, key])]) };
  }
  return { kind: "literal", value: raw };
}

/**
 * Every path a mapping reads, with where it sits in the mapping.
 *
 * @example
 * mappingPaths(compileMapping({ a: "$.input.x" })); // [{ at: ["a"], segments: ["input", "x"] }]
 */
export function mappingPaths(mapping: Mapping, at: PathSegment[] = []): Array<{ at: PathSegment[]; segments: PathSegment[] }> {
  switch (mapping.kind) {
    case "path":
      return [{ at, segments: mapping.segments }];
    case "map":
      return mapping.entries.flatMap(([key, value]) => mappingPaths(value, [...at, key]));
    case "list":
      return mapping.items.flatMap((item, i) => mappingPaths(item, [...at, i]));
    case "literal":
      return [];
  }
}

/**
 * Builds the value a mapping describes from a scope (`{ input, nodes, feedback, error, round, run }`).
 *
 * @example
 * applyMapping(compileMapping("$.input"), { input: { a: 1 } }); // { a: 1 }
 */
export function applyMapping(mapping: Mapping, scope: unknown): unknown {
  switch (mapping.kind) {
    case "path":
      return structuredClone(resolvePath(scope, mapping.segments));
    case "literal":
      return mapping.value;
    case "list":
      return mapping.items.map((item) => applyMapping(item, scope)).filter((v) => v !== undefined);
    case "map": {
      const out: Record<string, unknown> = {};
      for (const [key, value] of mapping.entries) {
        const resolved = applyMapping(value, scope);
        if (resolved !== undefined) out[key] = resolved;
      }
      return out;
    }
  }
}
