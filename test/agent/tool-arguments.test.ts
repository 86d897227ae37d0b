/** Normalisation of tool arguments: every kind with before and after, the note it leaves, and the ambiguities it refuses to guess. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { normalizeArguments, readArguments } from "../../src/agent/tool-arguments.ts";
import { editDistance, enumMember, numberFromText } from "../../src/agent/tool-coercions.ts";
import { defineTool } from "../../src/agent/tool-definition.ts";
import { repairJson } from "../../src/agent/tool-json-repair.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

const tool = defineTool({
  name: "sample",
  description: "every kind of field",
  schema: z.object({
    count: z.number().int(),
    ratio: z.number().optional(),
    loud: z.boolean().optional(),
    format: z.enum(["json", "jsonl", "text", "markdown"]).optional(),
    label: z.string().optional(),
    tags: z.array(z.string()).optional(),
    sizes: z.array(z.number()).optional(),
    options: z.object({ depth: z.number().int(), deep: z.boolean().optional() }).optional(),
    limit: z.number().nullable().optional(),
    either: z.union([z.number(), z.object({ n: z.number() })]).optional(),
    headers: z.record(z.string(), z.number()).optional(),
  }),
  run: (args) => args,
});

/** Normalises `{ count: 1, [field]: before }` and returns the field's new value and the notes. */
function normalize(field: string, before: unknown): { after: unknown; notes: string[] } {
  const { value, normalized } = normalizeArguments(tool.parameters, { count: 1, [field]: before });
  return { after: (value as Record<string, unknown>)[field], notes: normalized };
}

describe("each kind of normalisation, before and after", () => {
  const cases: Array<[kind: string, field: string, before: unknown, after: unknown, note: string]> = [
    ["number in a string", "count", "3", 3, 'count: "3" → 3 (number in a string)'],
    ["number in text", "count", "3 times", 3, 'count: "3 times" → 3 (number in text)'],
    ["number with spaces", "ratio", " 4.5 ", 4.5, 'ratio: " 4.5 " → 4.5 (number in a string)'],
    ["negative number", "ratio", "-0.25", -0.25, 'ratio: "-0.25" → -0.25 (number in a string)'],
    ["exponent", "ratio", "1e3", 1000, 'ratio: "1e3" → 1000 (number in a string)'],
    ["thousands separators", "count", "about 1,000 rows", 1000, 'count: "about 1,000 rows" → 1000 (number in text)'],
    ["an integral decimal for an integer", "count", "3.0", 3, 'count: "3.0" → 3 (number in a string)'],
    ["boolean yes", "loud", "yes", true, 'loud: "yes" → true (boolean as a word)'],
    ["boolean NO", "loud", "NO", false, 'loud: "NO" → false (boolean as a word)'],
    ["boolean True", "loud", " True ", true, 'loud: " True " → true (boolean as a word)'],
    ["boolean off", "loud", "off", false, 'loud: "off" → false (boolean as a word)'],
    ["boolean on", "loud", "On", true, 'loud: "On" → true (boolean as a word)'],
    ["boolean '1'", "loud", "1", true, 'loud: "1" → true (boolean as a word)'],
    ["boolean '0'", "loud", "0", false, 'loud: "0" → false (boolean as a word)'],
    ["boolean 1", "loud", 1, true, "loud: 1 → true (boolean as a number)"],
    ["enum case", "format", "JSON", "json", 'format: "JSON" → "json" (enum case)'],
    ["enum member in text", "format", "JSON格式", "json", 'format: "JSON格式" → "json" (enum member inside the text)'],
    ["enum, longest containing member", "format", "a JSONL file", "jsonl", 'format: "a JSONL file" → "jsonl" (enum member inside the text)'],
    ["enum near miss, 1 edit", "format", "markdwn", "markdown", 'format: "markdwn" → "markdown" (enum near miss (edit distance 1))'],
    ["enum near miss, 2 edits", "format", "mrakdown", "markdown", 'format: "mrakdown" → "markdown" (enum near miss (edit distance 2))'],
    ["enum nearest of two", "format", "jsn", "json", 'format: "jsn" → "json" (enum near miss (edit distance 1))'],
    ["number as text", "label", 42, "42", 'label: 42 → "42" (number as text)'],
    ["boolean as text", "label", false, "false", 'label: false → "false" (boolean as text)'],
    ["JSON value as text", "label", { a: 1 }, '{"a":1}', 'label: {"a":1} → "{\\"a\\":1}" (JSON value as text)'],
    ["JSON text for an object", "options", '{"depth": 2}', { depth: 2 }, 'options: "{\\"depth\\": 2}" → {"depth":2} (JSON text parsed)'],
    ["JSON text for an array", "tags", '["a", "b"]', ["a", "b"], 'tags: "[\\"a\\", \\"b\\"]" → ["a","b"] (JSON text parsed)'],
    ["almost-JSON text for an object", "options", "{'depth': 2,}", { depth: 2 }, "options: \"{'depth': 2,}\" → {\"depth\":2} (JSON text parsed after repair: single quotes, trailing comma)"],
    ["single value for an array", "tags", "solo", ["solo"], 'tags: "solo" → ["solo"] (single value wrapped in an array)'],
    ["null for an optional field", "format", null, undefined, "format: null → left out (null for an optional field)"],
    ["record values", "headers", { a: "5" }, { a: 5 }, 'headers.a: "5" → 5 (number in a string)'],
    ["union: first branch that can take it", "either", "7", 7, 'either: "7" → 7 (number in a string)'],
  ];

  test.each(cases)("%s", (_kind, field, before, after, note) => {
    const { after: actual, notes } = normalize(field, before);
    expect(actual).toEqual(after);
    expect(notes).toEqual([note]);
    expect(tool.schema.safeParse({ count: 1, ...(after !== undefined && { [field]: after }) }).success).toBe(true);
  });

  test("nested fields are normalised where they are, with their path in the note", () => {
    const { value, normalized } = normalizeArguments(tool.parameters, { count: "2", options: { depth: "3", deep: "yes" }, sizes: ["1", 2, "3 kb"] });
    expect(value).toEqual({ count: 2, options: { depth: 3, deep: true }, sizes: [1, 2, 3] });
    expect(normalized).toEqual([
      'count: "2" → 2 (number in a string)',
      'options.depth: "3" → 3 (number in a string)',
      'options.deep: "yes" → true (boolean as a word)',
      'sizes[0]: "1" → 1 (number in a string)',
      'sizes[2]: "3 kb" → 3 (number in text)',
    ]);
  });

  test("a JSON string for an object is parsed, then its fields are normalised too", () => {
    const { after, notes } = normalize("options", '{"depth": "4"}');
    expect(after).toEqual({ depth: 4 });
    expect(notes).toHaveLength(2);
    expect(notes[1]).toBe('options.depth: "4" → 4 (number in a string)');
  });

  test("a null for a nullable field is kept", () => {
    expect(normalize("limit", null)).toEqual({ after: null, notes: [] });
  });

  test("values that already fit are untouched, and the input is not modified", () => {
    const input = { count: 3, loud: true, format: "text", tags: ["a"], options: { depth: 1 } };
    const copy = structuredClone(input);
    const { value, normalized } = normalizeArguments(tool.parameters, input);
    expect(value).toEqual(input);
    expect(normalized).toEqual([]);
    expect(input).toEqual(copy);
  });
});

describe("what normalisation leaves for validation to report", () => {
  test.each<[string, string, unknown]>([
    ["two numbers are ambiguous", "count", "3-5"],
    ["no number at all", "count", "three"],
    ["an unknown boolean word", "loud", "maybe"],
    ["an enum word far from every member", "format", "xml"],
    ["an enum text holding two unrelated members", "format", "json or text"],
    ["a JSON text of the wrong kind", "options", "[1, 2]"],
    ["a text that is no JSON for an object", "options", "depth two"],
  ])("%s", (_what, field, before) => {
    expect(normalize(field, before)).toEqual({ after: before, notes: [] });
  });

  test("a non-integral number for an integer is converted, not rounded: validation refuses it", () => {
    const { after } = normalize("count", "4.5");
    expect(after).toBe(4.5);
    expect(tool.schema.safeParse({ count: after }).success).toBe(false);
  });

  test("a member nearer than another by a tie is ambiguous", () => {
    expect(enumMember("cot", ["cat", "cut"])).toBeUndefined();
    expect(enumMember("Cat", ["cat", "CAT"])).toBeUndefined();
  });

  test("a near miss may not change more than half of a short member", () => {
    expect(enumMember("xy", ["md", "txt"])).toBeUndefined();
    expect(enumMember("yml", ["yaml", "toml"])?.value).toBe("yaml");
  });

  test("edit distance counts insertions, deletions and substitutions, by code point", () => {
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("格式", "格式")).toBe(0);
    expect(editDistance("json格式", "json")).toBe(2);
    expect(numberFromText("1,5")).toBeUndefined(); // a decimal comma or a list: not guessed
  });
});

describe("reading the argument text", () => {
  const read = (raw: string | object) => {
    const notes: string[] = [];
    return { value: readArguments(raw, notes, "a JSON object with count"), notes };
  };
  const refused = (raw: string | object): HermesError => {
    try {
      read(raw);
    } catch (error) {
      if (error instanceof HermesError) return error;
      throw error;
    }
    throw new Error("expected a refusal");
  };

  test.each<[string, string, Record<string, unknown>, string[]]>([
    ["JSON", '{"count": 3}', { count: 3 }, []],
    ["empty text", "  ", {}, ['arguments: "" → {} (empty arguments)']],
    ["trailing commas", '{"tags": ["a",], "count": 1,}', { tags: ["a"], count: 1 }, ["arguments: repaired JSON (trailing comma)"]],
    ["single quotes", "{'label': 'it\\'s \"ok\"'}", { label: "it's \"ok\"" }, ["arguments: repaired JSON (single quotes)"]],
    ["unquoted keys", "{count: 3, format: 'json'}", { count: 3, format: "json" }, ["arguments: repaired JSON (unquoted key, single quotes)"]],
    ["Python literals", '{"loud": True, "limit": None}', { loud: true, limit: null }, ["arguments: repaired JSON (Python True/False/None)"]],
    ["a code fence", '```json\n{"count": 3}\n```', { count: 3 }, ["arguments: repaired JSON (code fence removed)"]],
    ["JSON encoded twice", JSON.stringify(JSON.stringify({ count: 3 })), { count: 3 }, ["arguments: JSON text inside a JSON string, decoded twice"]],
  ])("%s", (_what, raw, value, notes) => {
    expect(read(raw)).toEqual({ value, notes });
  });

  test("an object is taken as it is", () => {
    const args = { count: 1 };
    expect(read(args).value).toBe(args);
  });

  test("commas and quotes inside strings are left alone by the repair", () => {
    expect(repairJson('{"a": "x,}", "b": "it\'s",}')).toEqual({ text: '{"a": "x,}", "b": "it\'s"}', repairs: ["trailing comma"] });
    expect(repairJson('{"a": 1}')).toEqual({ text: '{"a": 1}', repairs: [] });
  });

  test("text that is not JSON, even repaired, is code 2 'arguments are not JSON'", () => {
    const error = refused("count = 3");
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error.message).toBe("arguments are not JSON");
    expect(error.fields.reason).toBeString();
    expect(error.fields.expected).toBe("a JSON object with count");
    expect(refused("{'count': 3").message).toBe("arguments are not JSON"); // unclosed: not guessed
  });

  test.each([["[1, 2]", "an array"], ["42", "a number"], ["null", "null"], ['"just text"', "a string"]])("%s is code 2 'not a JSON object'", (raw, got) => {
    const error = refused(raw);
    expect(error.message).toBe("arguments are not a JSON object");
    expect(error.fields.reason).toBe(`the arguments are ${got}`);
  });
});
