/** The calculator as a tool: the safe parser of calculator.ts behind a one-field schema. */
import { z } from "zod";
import { evaluateExpression } from "../calculator.ts";
import { defineTool } from "../tool-definition.ts";

const CalculatorArguments = z.object({
  expression: z.string().min(1).describe("an arithmetic expression, e.g. (12 + 34) * 56"),
});

/**
 * `calculator`: evaluates `+ - * / % ^` and parentheses over decimal numbers, without `eval`.
 * A malformed expression is code 2 with the position of the mistake, from `evaluateExpression`.
 *
 * @example
 * await registry.call("calculator", '{"expression": "2^10"}', ctx); // { ok: true, value: 1024, normalized: [] }
 */
export function calculatorTool() {
  return defineTool({
    name: "calculator",
    description: "Evaluates an arithmetic expression with + - * / % ^ and parentheses, e.g. (12 + 34) * 56, and returns the number.",
    schema: CalculatorArguments,
    run: ({ expression }) => evaluateExpression(expression),
  });
}
