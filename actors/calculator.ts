import { defineActor } from "../src/actor/define-actor.ts";
import { evaluateExpression } from "../src/agent/calculator.ts";
import { ErrorCode, HermesError } from "../mesh/errors.ts";

/**
 * The calculator tool as an actor: `{ expression: "(1+2)*3^2" }` answers
 * `{ result: 27, expression }`. The payload of the protocol's HTTP example works as is:
 * `{ task_id: "x1y2z3", tool: "calculator", expression: "2+2" }` answers `{ result: 4, ... }`
 * with its `task_id` passed through (in errors too). A bad expression, or a missing one, is
 * code 2 with `reason` and `expected`; a `tool` other than "calculator" is code 4. Evaluation
 * is a real parser (src/agent/calculator.ts), never `eval`.
 *
 * @example
 * // hermes-mesh send --capability calculator '{"expression":"-2^2"}'   ->   {"result":-4,"expression":"-2^2"}
 * const { result } = await ctx.request({ capability: "calculator" }, { expression: "2+2" }); // 4
 */
export default defineActor({
  capabilities: ["calculator"],
  // Published as the A2A skill and MCP tool "calculator" by the gateway (docs/interop.md).
  capabilityInfo: {
    calculator: {
      description: "Evaluates an arithmetic expression: + - * / ^ %, parentheses, decimals. Answers { result, expression }.",
      inputSchema: {
        type: "object",
        properties: { expression: { type: "string", description: "The expression, such as \"(1+2)*3^2\"", minLength: 1 } },
        required: ["expression"],
      },
    },
  },
  // Synchronous: the work is microseconds, and a handler that returns a promise costs a deadline timer.
  onRequest(request) {
    const { expression, task_id, tool } = request.payload;
    const echo = task_id === undefined ? {} : { task_id };
    if (tool !== undefined && tool !== "calculator") {
      throw new HermesError(ErrorCode.TOOL_NOT_FOUND, `no tool '${String(tool)}' here`, { ...echo, requested_tool: tool, available_tools: ["calculator"] });
    }
    if (typeof expression !== "string") {
      const reason = expression === undefined ? "the payload has no 'expression'" : `'expression' is ${describe(expression)}, not a string`;
      throw new HermesError(ErrorCode.INVALID_REQUEST, reason, { ...echo, reason, expected: "'expression': a string such as \"2+2\"" });
    }
    try {
      return { ...echo, result: evaluateExpression(expression), expression };
    } catch (error) {
      const e = HermesError.from(error);
      throw new HermesError(e.code, e.message, { ...echo, ...e.fields, expression }, { cause: error });
    }
  },
});

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "a map" : `a ${typeof value}`;
}
