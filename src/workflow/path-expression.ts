/**
 * Paths into a run's data: `$.input.prompt`, `$.nodes.image.result.url`, `$.nodes.a.result.items[0]`,
 * `$.feedback["needs work"]`. The one way workflow files read values: input mappings and `when`
 * conditions both use them, and the loader checks every path against the graph before a run.
 */

/** One step of a path: a map key or a list index. */
export type PathSegment = string | number;

/**
 * The roots a path may start from (after `$.`).
 *
 * @example
 * PATH_ROOTS.includes("nodes"); // true
 */
export const PATH_ROOTS = ["input", "nodes", "feedback", "error", "round", "run", "result"] as const;
export type PathRoot = (typeof PATH_ROOTS)[number];

/**
 * A parse problem, with the 0-based position in the text where it was found.
 *
 * @example
 * try { parsePath("$.a."); } catch (e) { (e as PathSyntaxError).position; } // 4
 */
export class PathSyntaxError extends Error {
  readonly position: number;
  constructor(message: string, position: number) {
    super(message);
    this.name = "PathSyntaxError";
    this.position = position;
  }
}

const IDENT = /[A-Za-z_][A-Za-z0-9_-]*/y;

/**
 * Reads a path starting at `start` (which must point at `$`); returns its segments and where it
 * ended. Used by the condition parser to read paths inside larger expressions.
 *
 * @example
 * readPath("$.nodes.a.result[0] == 1", 0); // { segments: ["nodes", "a", "result", 0], end: 19 }
 */
export function readPath(text: string, start: number): { segments: PathSegment[]; end: number } {
  if (text[start] !== "$") throw new PathSyntaxError("a path starts with $", start);
  const segments: PathSegment[] = [];
  let i = start + 1;
  for (;;) {
    if (text[i] === ".") {
      IDENT.lastIndex = i + 1;
      const match = IDENT.exec(text);
      if (!match) throw new PathSyntaxError("expected a name after '.'", i + 1);
      segments.push(match[0]);
      i = IDENT.lastIndex;
    } else if (text[i] === "[") {
      const close = text.indexOf("]", i);
      if (close < 0) throw new PathSyntaxError("missing ']'", i);
      const inner = text.slice(i + 1, close).trim();
      if (/^\d+$/.test(inner)) segments.push(Number(inner));
      else if (/^"[^"]*"$|^'[^']*'$/.test(inner)) segments.push(inner.slice(1, -1));
      else throw new PathSyntaxError("expected a list index or a quoted key inside [ ]", i + 1);
      i = close + 1;
    } else break;
  }
  return { segments, end: i };
}

/**
 * Parses a whole path expression.
 *
 * @example
 * parsePath("$.input.prompt"); // ["input", "prompt"]
 */
export function parsePath(text: string): PathSegment[] {
  const trimmed = text.trim();
  const { segments, end } = readPath(trimmed, 0);
  if (end !== trimmed.length) throw new PathSyntaxError(`unexpected '${trimmed.slice(end)}' after the path`, end);
  return segments;
}

/**
 * Follows a path through plain data; undefined when any step is missing.
 *
 * @example
 * resolvePath({ input: { tags: ["a"] } }, ["input", "tags", 0]); // "a"
 */
export function resolvePath(scope: unknown, segments: readonly PathSegment[]): unknown {
  let value = scope;
  for (const segment of segments) {
    if (value === null || typeof value !== "object") return undefined;
    if (typeof segment === "number" && !Array.isArray(value)) return undefined;
    // Own keys only: a path must never reach a prototype ("$.input.constructor").
    if (!Object.hasOwn(value as object, segment)) return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}

/**
 * A path as text again, for messages.
 *
 * @example
 * formatPath(["nodes", "a", 0]); // "$.nodes.a[0]"
 */
export function formatPath(segments: readonly PathSegment[]): string {
  return `$${segments.map((s) => (typeof s === "number" ? `[${s}]` : /^[A-Za-z_][A-Za-z0-9_-]*$/.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`)).join("")}`;
}
