/** The calculator tool: the safe parser behind the registry, with its code 2 errors passed through. */
import { expect, test } from "bun:test";
import { ToolRegistry, type ToolContext } from "../../src/agent/tool-registry.ts";
import { calculatorTool } from "../../src/agent/tools/builtin-tools.ts";
import { ErrorCode } from "../../mesh/errors.ts";

const registry = new ToolRegistry([calculatorTool()]);
const ctx: ToolContext = { trace_id: "t", signal: new AbortController().signal };

test("evaluates the expression the model wrote", async () => {
  expect(await registry.call("calculator", '{"expression": "(12 + 34) * 56"}', ctx)).toEqual({ ok: true, value: 2576, normalized: [] });
});

test("a bare number for the expression is read as its text", async () => {
  expect(await registry.call("calculator", { expression: 42 }, ctx)).toEqual({ ok: true, value: 42, normalized: ['expression: 42 → "42" (number as text)'] });
});

test("a malformed expression is code 2 with the position, from the parser", async () => {
  const result = await registry.call("calculator", { expression: "2 + * 3" }, ctx);
  expect(result.ok).toBe(false);
  if (!result.ok) expect(result.error).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, position: 5 });
});

test("there is no eval behind it", async () => {
  const result = await registry.call("calculator", { expression: "process.exit(1)" }, ctx);
  expect(result.ok).toBe(false);
  if (!result.ok) expect(result.error.error_code).toBe(ErrorCode.INVALID_REQUEST);
});

test("the model sees one required string field", () => {
  expect(registry.list()[0]!.parameters).toMatchObject({ type: "object", properties: { expression: { type: "string" } }, required: ["expression"] });
});
