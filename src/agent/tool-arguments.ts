/**
 * Normalisation of tool arguments before validation: the argument text is read as JSON
 * (leniently), then the value is walked alongside the tool's JSON Schema and every field whose
 * type is wrong is coerced to the declared type where the coercion is unambiguous
 * (tool-coercions.ts). Each change is noted, so the log shows what the model wrote and what
 * the tool received. Whatever still does not fit is left for validation to report.
 */
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { JsonSchema } from "./chat-types.ts";
import { booleanFromValue, enumMember, jsonFromText, numberFromText, textFromValue, wrapInArray, type Coerced } from "./tool-coercions.ts";
import { repairJson } from "./tool-json-repair.ts";

/**
 * The arguments object from what the model sent: an object as it is; text parsed as JSON,
 * repaired leniently if it does not parse (see `repairJson`); empty text as `{}`; JSON text
 * that encodes a string of JSON decoded once more. Anything else is a HermesError code 2,
 * "arguments are not JSON" or "arguments are not a JSON object", with `reason` and `expected`.
 *
 * @example
 * const notes: string[] = [];
 * readArguments("{'count': '3',}", notes, "a JSON object"); // { count: "3" }
 * notes; // ["arguments: repaired JSON (single quotes, trailing comma)"]
 */
export function readArguments(raw: string | object, notes: string[], expected: string): Record<string, unknown> {
  let value: unknown = raw;
  if (typeof raw === "string") {
    if (raw.trim() === "") {
      notes.push('arguments: "" → {} (empty arguments)');
      return {};
    }
    value = parseLenient(raw, notes, expected);
    if (typeof value === "string" && /^\s*[{[]/.test(value)) {
      value = parseLenient(value, notes, expected);
      notes.push("arguments: JSON text inside a JSON string, decoded twice");
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    const got = value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
    throw new HermesError(ErrorCode.INVALID_REQUEST, "arguments are not a JSON object", { reason: `the arguments are ${got}`, expected });
  }
  return value as Record<string, unknown>;
}

function parseLenient(text: string, notes: string[], expected: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const { text: repaired, repairs } = repairJson(text);
    if (repairs.length > 0) {
      try {
        const value: unknown = JSON.parse(repaired);
        notes.push(`arguments: repaired JSON (${repairs.join(", ")})`);
        return value;
      } catch {
        // the repair did not help: report the original error
      }
    }
    const reason = error instanceof Error ? error.message : String(error);
    throw new HermesError(ErrorCode.INVALID_REQUEST, "arguments are not JSON", { reason, expected });
  }
}

/**
 * Coerces `args` towards `schema` (a JSON Schema as derived from zod) and notes each change as
 * `field: before → after (why)`. Rules, per declared type, for a value that does not fit it:
 * - number / integer: a number in text ("3", " 4.5 ", "3 times"): `numberFromText`;
 * - boolean: yes/no, true/false, on/off, 1/0 in any case: `booleanFromValue`;
 * - string: a number, boolean or JSON value as text: `textFromValue`; for an enum, then the
 *   member meant, by case, containment or a near miss: `enumMember`;
 * - object / array: JSON text parsed: `jsonFromText`; array: else a single value wrapped;
 * - an optional field sent as `null` (and not nullable) is dropped, as if left out.
 * Objects and arrays are walked field by field; `anyOf` takes the first branch that fits.
 * The input is not modified.
 *
 * @example
 * normalizeArguments(z.toJSONSchema(z.object({ count: z.number().int() })), { count: "3 times" });
 * // { value: { count: 3 }, normalized: ['count: "3 times" → 3 (number in text)'] }
 */
export function normalizeArguments(schema: JsonSchema, args: unknown): { value: unknown; normalized: string[] } {
  const notes: string[] = [];
  return { value: walk(schema, args, "", schema, notes), normalized: notes };
}

function walk(node: JsonSchema, value: unknown, path: string, root: JsonSchema, notes: string[]): unknown {
  node = resolveRef(node, root);
  if (value === undefined) return value;
  const branches = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(branches)) {
    const resolved = branches.map((b) => resolveRef(b, root));
    const fitting = resolved.find((b) => fits(b, value));
    if (fitting) return walk(fitting, value, path, root, notes);
    for (const branch of resolved) {
      const tried: string[] = [];
      const result = walk(branch, value, path, root, tried);
      if (fits(branch, result)) {
        notes.push(...tried);
        return result;
      }
    }
    return value;
  }
  if (!fits(node, value)) {
    for (const type of typesOf(node)) {
      const coerced = coerce(type, node, value);
      if (coerced) {
        notes.push(`${path || "arguments"}: ${show(value)} → ${show(coerced.value)} (${coerced.why})`);
        value = coerced.value;
        break;
      }
    }
  }
  return descend(node, value, path, root, notes);
}

/** One coercion towards one declared type; enum and const members narrow what is accepted. */
function coerce(type: string, node: JsonSchema, value: unknown): Coerced {
  const members = Array.isArray(node.enum) ? node.enum : "const" in node ? [node.const] : undefined;
  const member = (c: Coerced): Coerced => (!c || !members || members.includes(c.value) ? c : undefined);
  switch (type) {
    case "integer":
    case "number":
      return member(numberFromText(value));
    case "boolean":
      return member(booleanFromValue(value));
    case "string": {
      const text = typeof value === "string" ? undefined : textFromValue(value);
      const asText = text ? text.value : value;
      if (!members || members.includes(asText)) return text;
      const meant = enumMember(asText, members);
      return meant && text ? { value: meant.value, why: `${text.why}, ${meant.why}` } : meant;
    }
    case "object":
      return jsonFromText(value, "object");
    case "array":
      return jsonFromText(value, "array") ?? wrapInArray(value);
    default:
      return undefined;
  }
}

/** Walks into the fields of an object and the items of an array. */
function descend(node: JsonSchema, value: unknown, path: string, root: JsonSchema, notes: string[]): unknown {
  if (Array.isArray(value)) {
    const items = node.items as JsonSchema | undefined;
    const prefix = node.prefixItems as JsonSchema[] | undefined;
    return value.map((item, i) => {
      const schema = prefix?.[i] ?? items;
      return schema && typeof schema === "object" ? walk(schema, item, `${path}[${i}]`, root, notes) : item;
    });
  }
  if (!isPlainObject(value)) return value;
  const properties = (node.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((node.required ?? []) as string[]);
  const extra = isPlainObject(node.additionalProperties) ? (node.additionalProperties as JsonSchema) : undefined;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const schema = Object.hasOwn(properties, key) ? properties[key] : extra;
    const field = path ? `${path}.${key}` : key;
    if (item === null && schema && !required.has(key) && !allowsNull(schema, root)) {
      notes.push(`${field}: null → left out (null for an optional field)`);
      continue;
    }
    out[key] = schema ? walk(schema, item, field, root, notes) : item;
  }
  return out;
}

/** Whether `value` already has one of the node's types and, if it has them, is an enum or const member. */
function fits(node: JsonSchema, value: unknown): boolean {
  if (Array.isArray(node.enum) && !node.enum.includes(value)) return false;
  if ("const" in node && node.const !== value) return false;
  const types = typesOf(node);
  return types.length === 0 || types.some((type) => hasType(type, value));
}

function typesOf(node: JsonSchema): string[] {
  if (typeof node.type === "string") return [node.type];
  if (Array.isArray(node.type)) return node.type as string[];
  const members = Array.isArray(node.enum) ? node.enum : "const" in node ? [node.const] : [];
  return [...new Set(members.map((m) => (m === null ? "null" : typeof m)))];
}

function hasType(type: string, value: unknown): boolean {
  switch (type) {
    case "integer": return Number.isInteger(value);
    case "number": return typeof value === "number" && Number.isFinite(value);
    case "string": return typeof value === "string";
    case "boolean": return typeof value === "boolean";
    case "null": return value === null;
    case "array": return Array.isArray(value);
    case "object": return isPlainObject(value);
    default: return true;
  }
}

function allowsNull(node: JsonSchema, root: JsonSchema): boolean {
  node = resolveRef(node, root);
  const branches = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(branches)) return branches.some((b) => allowsNull(b, root));
  return typesOf(node).includes("null") || (typesOf(node).length === 0 && !Array.isArray(node.enum) && !("const" in node));
}

/** Follows a local `$ref` (`#/$defs/Name`, `#`), as zod writes for shared and recursive schemas. */
export function resolveRef(node: JsonSchema, root: JsonSchema): JsonSchema {
  let current = node;
  for (let hops = 0; typeof current.$ref === "string" && current.$ref.startsWith("#") && hops < 32; hops++) {
    const parts = current.$ref.slice(1).split("/").filter(Boolean).map((p) => decodeURIComponent(p).replace(/~1/g, "/").replace(/~0/g, "~"));
    let target: unknown = root;
    for (const part of parts) target = isPlainObject(target) ? target[part] : undefined;
    if (!isPlainObject(target)) return current;
    current = target;
  }
  return current;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A value as it appears in a note: JSON, cut to 60 characters. */
export function show(value: unknown): string {
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
