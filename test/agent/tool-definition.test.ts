/** defineTool: MCP's name rule, the JSON Schema derived for the model, refusals at definition. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { defineTool, TOOL_NAME_PATTERN } from "../../src/agent/tool-definition.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

const schema = z.object({ x: z.number() });
const define = (name: unknown) => defineTool({ name: name as string, description: "a tool", schema, run: () => null });

function refusal(make: () => unknown): HermesError {
  try {
    make();
  } catch (error) {
    if (error instanceof HermesError) return error;
    throw error;
  }
  throw new Error("expected the definition to be refused");
}

describe("tool names follow MCP's rule", () => {
  test.each(["a", "calculator", "http_fetch", "files.read", "git-status", "A.b_c-9", "x".repeat(128)])("accepts %p", (name) => {
    expect(define(name).name).toBe(name);
  });

  test.each(["", "x".repeat(129), "has space", "slash/name", "colon:name", "émoji", "tab\t", "semi;colon", 42, undefined])("refuses %p with code 2", (name) => {
    const error = refusal(() => define(name));
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error.message).toContain("invalid tool name");
    expect(String(error.fields.reason)).toContain("1 to 128 characters");
    expect(error.fields.expected).toBe(TOOL_NAME_PATTERN.source);
  });
});

test("an empty description is refused: the model chooses tools by it", () => {
  const error = refusal(() => defineTool({ name: "t", description: "  ", schema, run: () => null }));
  expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
  expect(error.message).toContain("no description");
});

test("a schema that JSON Schema cannot express is refused at definition, not at the first call", () => {
  const error = refusal(() => defineTool({ name: "when", description: "d", schema: z.object({ at: z.date() }), run: () => null }));
  expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
  expect(error.message).toContain("cannot be written as JSON Schema");
});

describe("the JSON Schema the model sees", () => {
  const tool = defineTool({
    name: "report",
    description: "Writes a report",
    schema: z.object({
      title: z.string().min(1).describe("the title"),
      count: z.number().int().min(1),
      format: z.enum(["json", "text"]),
      draft: z.boolean().default(false),
      tags: z.array(z.string()).optional(),
      meta: z.object({ author: z.string() }).optional(),
    }),
    run: (args) => args,
  });

  test("is derived from the zod schema: types, enums, bounds and descriptions", () => {
    const properties = tool.parameters.properties as Record<string, Record<string, unknown>>;
    expect(tool.parameters.type).toBe("object");
    expect(properties.title).toEqual({ type: "string", minLength: 1, description: "the title" });
    expect(properties.count).toMatchObject({ type: "integer", minimum: 1 });
    expect(properties.format).toEqual({ type: "string", enum: ["json", "text"] });
    expect(properties.tags).toEqual({ type: "array", items: { type: "string" } });
    expect(properties.meta).toMatchObject({ type: "object", properties: { author: { type: "string" } }, required: ["author"] });
  });

  test("describes the input: a field with a default is optional to the model", () => {
    expect(tool.parameters.required).toEqual(["title", "count", "format"]);
    expect((tool.parameters.properties as Record<string, unknown>).draft).toEqual({ type: "boolean", default: false });
  });

  test("carries no $schema marker, and the spec is a ToolSpec", () => {
    expect(tool.parameters).not.toHaveProperty("$schema");
    expect(tool.spec).toEqual({ name: "report", description: "Writes a report", parameters: tool.parameters });
    expect(JSON.parse(JSON.stringify(tool.spec))).toEqual(tool.spec);
  });

  test("a definition is frozen", () => {
    expect(Object.isFrozen(tool)).toBe(true);
  });
});
