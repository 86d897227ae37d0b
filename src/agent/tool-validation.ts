/**
 * Validation of normalised arguments against the tool's zod schema, and the code 2 error a
 * model can act on: every bad field named, with what the schema expects there and what it got.
 */
import type { z } from "zod";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { JsonSchema } from "./chat-types.ts";
import { resolveRef, show } from "./tool-arguments.ts";
import type { ToolDefinition } from "./tool-definition.ts";

/** One field that failed validation, as listed in the error's `fields`. */
export interface FieldProblem {
  field: string;
  problem: string;
  expected: string;
  received?: unknown;
}

/**
 * Parses `args` with the tool's schema and returns the typed arguments, or throws a HermesError
 * code 2 whose `reason` names each bad field with its problem, whose `expected` says what the
 * schema wants for each of them, and whose `fields` lists them one by one.
 *
 * @example
 * validateArguments(repeat, { word: "a", count: 0 });
 * // throws: code 2, reason 'count: Too small: expected number to be >=1 (got 0)', expected 'count: integer ≥ 1'
 */
export function validateArguments<S extends z.ZodObject>(tool: ToolDefinition<S>, args: Record<string, unknown>): z.output<S> {
  const result = tool.schema.safeParse(args);
  if (result.success) return result.data;
  const root = tool.parameters;
  const problems: FieldProblem[] = result.error.issues.flatMap((issue) => {
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ field: [...issue.path, key].join("."), problem: "is not a field of this tool", expected: `one of the fields ${fieldNames(root)}` }));
    }
    const field = issue.path.map(String).join(".") || "arguments";
    const received = valueAt(args, issue.path);
    const node = schemaAt(root, issue.path);
    const expected = node ? describeSchema(node, root) : "see the tool's parameters";
    const problem = received === undefined ? "is required but missing" : `${issue.message} (got ${show(received)})`;
    return [{ field, problem, expected, ...(received !== undefined && { received }) }];
  });
  const open = root.additionalProperties !== undefined && root.additionalProperties !== false;
  const unknown = open ? [] : Object.keys(args).filter((key) => !Object.hasOwn((root.properties ?? {}) as object, key));
  const hint = unknown.length > 0 ? `; unknown fields ignored: ${unknown.join(", ")} (fields are ${fieldNames(root)})` : "";
  throw new HermesError(ErrorCode.INVALID_REQUEST, `invalid arguments for tool '${tool.name}': ${problems.map((p) => p.field).join(", ")}`, {
    reason: problems.map((p) => `${p.field}: ${p.problem}`).join("; ") + hint,
    expected: problems.map((p) => `${p.field}: ${p.expected}`).join("; "),
    fields: problems,
  });
}

/**
 * A JSON Schema in a few words, for error messages: `integer ≥ 1`, `one of "json", "text"`,
 * `array of string`, `object with url, method?` (`?` marks optional fields), plus the field's
 * description in parentheses.
 *
 * @example
 * describeSchema({ type: "integer", minimum: 1, description: "how many" }); // 'integer ≥ 1 (how many)'
 */
export function describeSchema(node: JsonSchema, root: JsonSchema = node): string {
  node = resolveRef(node, root);
  const about = typeof node.description === "string" ? ` (${node.description})` : "";
  return describeShape(node, root) + about;
}

function describeShape(node: JsonSchema, root: JsonSchema): string {
  if (Array.isArray(node.enum)) return `one of ${node.enum.map((m) => JSON.stringify(m)).join(", ")}`;
  if ("const" in node) return `exactly ${JSON.stringify(node.const)}`;
  const branches = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(branches)) return branches.map((b) => describeSchema(b, root)).join(" or ");
  const types = typeof node.type === "string" ? [node.type] : Array.isArray(node.type) ? (node.type as string[]) : [];
  if (types.length === 0) return "any JSON value";
  return types.map((type) => describeType(type, node, root)).join(" or ");
}

function describeType(type: string, node: JsonSchema, root: JsonSchema): string {
  const limits: string[] = [];
  const limit = (key: string, text: (v: number) => string) => {
    const v = node[key];
    if (typeof v === "number" && Math.abs(v) < Number.MAX_SAFE_INTEGER) limits.push(text(v));
  };
  switch (type) {
    case "integer":
    case "number":
      limit("minimum", (v) => `≥ ${v}`);
      limit("exclusiveMinimum", (v) => `> ${v}`);
      limit("maximum", (v) => `≤ ${v}`);
      limit("exclusiveMaximum", (v) => `< ${v}`);
      return [type, ...limits].join(" ");
    case "string":
      limit("minLength", (v) => `at least ${v} character${v === 1 ? "" : "s"}`);
      limit("maxLength", (v) => `at most ${v} character${v === 1 ? "" : "s"}`);
      if (typeof node.format === "string") limits.push(`format ${node.format}`);
      if (typeof node.pattern === "string") limits.push(`matching /${node.pattern}/`);
      return limits.length > 0 ? `string, ${limits.join(", ")}` : "string";
    case "array": {
      const items = node.items && typeof node.items === "object" ? describeSchema(node.items as JsonSchema, root) : "any";
      limit("minItems", (v) => `at least ${v}`);
      limit("maxItems", (v) => `at most ${v}`);
      return `array of ${items}${limits.length > 0 ? ` (${limits.join(", ")})` : ""}`;
    }
    case "object":
      if (node.properties) return `object with ${fieldNames(node)}`;
      if (node.additionalProperties && typeof node.additionalProperties === "object") {
        return `object of ${describeSchema(node.additionalProperties as JsonSchema, root)} values`;
      }
      return "object";
    case "boolean":
      return "boolean (true or false)";
    default:
      return type;
  }
}

/** `url, method?, headers?`: the fields of an object schema, optional ones marked. */
function fieldNames(node: JsonSchema): string {
  const required = new Set((node.required ?? []) as string[]);
  return Object.keys((node.properties ?? {}) as object).map((k) => (required.has(k) ? k : `${k}?`)).join(", ") || "(none)";
}

/** The schema of the value at `path`, following properties, items and the first fitting branch. */
function schemaAt(root: JsonSchema, path: readonly PropertyKey[]): JsonSchema | undefined {
  let node: JsonSchema | undefined = root;
  for (const key of path) {
    if (!node) return undefined;
    node = resolveRef(node, root);
    const branches = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
    if (Array.isArray(branches)) node = branches.map((b) => resolveRef(b, root)).find((b) => b.properties || b.items) ?? node;
    const properties = node.properties as Record<string, JsonSchema> | undefined;
    if (typeof key === "number") node = (node.prefixItems as JsonSchema[] | undefined)?.[key] ?? (node.items as JsonSchema | undefined);
    else node = properties?.[String(key)] ?? (typeof node.additionalProperties === "object" ? (node.additionalProperties as JsonSchema) : undefined);
  }
  return node;
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}
