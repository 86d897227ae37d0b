/**
 * What a tool is: a name, a description, a zod schema for its arguments and a function. The
 * JSON Schema the model sees is derived from the zod schema, so the two never disagree.
 */
import { z } from "zod";
import { ErrorCode, HermesError, type ErrorPayload } from "../../mesh/errors.ts";
import type { JsonSchema, ToolSpec } from "./chat-types.ts";

/** MCP's rule for tool names: 1 to 128 characters of letters, digits, `_`, `.` and `-`. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/** A tool_call / tool_result event, for the agent's JSON Lines log. */
export type ToolEvent = {
  event: "tool_call" | "tool_result";
  tool: string;
  trace_id: string;
  /** tool_result: wall time of the whole call, validation included. */
  ms?: number;
  ok?: boolean;
  error_code?: number;
  /** tool_result: what normalisation changed in the arguments, if anything. */
  normalized?: string[];
};

/** What a call runs in: its trace, cancellation, deadline and sandbox. */
export interface ToolContext {
  trace_id: string;
  /** Aborted when the caller gives up; the registry also aborts it when the call times out. */
  signal: AbortSignal;
  /** Deadline of one call in milliseconds (default 30 s), after which it fails with code 3. */
  timeoutMs?: number;
  /** Directory the file and shell tools are confined to; overrides the one they were built with. */
  sandboxDir?: string;
  onEvent?(event: ToolEvent): void;
  /** Progress of a long call (an MCP tool's progress notifications), for the agent's requester. */
  onProgress?(progress: ToolProgress): void;
}

/** How far a running call is: `progress` grows; `total` when the tool knows it. */
export interface ToolProgress {
  progress: number;
  total?: number;
  message?: string;
}

/**
 * The outcome of a call: a value, or the coded error the model can act on. `normalized` lists
 * what was changed in the arguments before validation (empty when nothing was).
 */
export type ToolResult =
  | { ok: true; value: unknown; normalized: string[] }
  | { ok: false; error: ErrorPayload; normalized: string[] };

/** A defined tool; `parameters` and `spec` are derived from `schema` once, at definition. */
export interface ToolDefinition<S extends z.ZodObject = z.ZodObject> {
  readonly name: string;
  readonly description: string;
  readonly schema: S;
  /** The JSON Schema of the arguments as the model should write them. */
  readonly parameters: JsonSchema;
  /** The tool as the model sees it. */
  readonly spec: ToolSpec;
  /** Runs with arguments already normalised and validated. Throw a HermesError to choose the code. */
  run(args: z.output<S>, ctx: ToolContext): unknown;
}

/**
 * Defines a tool. Refuses, with a HermesError code 2, a name outside MCP's rule, an empty
 * description or a schema that cannot be written as JSON Schema (a transform, a date, ...).
 *
 * @example
 * const repeat = defineTool({
 *   name: "repeat",
 *   description: "Repeats a word",
 *   schema: z.object({ word: z.string(), count: z.number().int().min(1) }),
 *   run: ({ word, count }) => word.repeat(count),
 * });
 * repeat.spec.parameters; // { type: "object", properties: { word: ..., count: ... }, required: [...] }
 */
export function defineTool<S extends z.ZodObject>(tool: {
  name: string;
  description: string;
  schema: S;
  run(args: z.output<S>, ctx: ToolContext): unknown;
}): ToolDefinition<S> {
  const { name, description, schema, run } = tool;
  if (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name)) {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `invalid tool name ${JSON.stringify(name)}`, {
      reason: `a tool name is 1 to 128 characters of A-Z, a-z, 0-9, '_', '.' and '-' (got ${typeof name === "string" ? `${name.length} characters` : typeof name})`,
      expected: TOOL_NAME_PATTERN.source,
    });
  }
  if (typeof description !== "string" || description.trim() === "") {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `tool '${name}' has no description`, {
      reason: "the model chooses tools by their description",
      expected: "a non-empty description",
    });
  }
  const parameters = deriveParameters(name, schema);
  return Object.freeze({ name, description, schema, parameters, spec: { name, description, parameters }, run });
}

/**
 * The input side of the schema (fields with defaults are optional to the model), without the
 * `$schema` marker that chat APIs do not expect.
 */
function deriveParameters(name: string, schema: z.ZodObject): JsonSchema {
  try {
    const { $schema: _dialect, ...parameters } = z.toJSONSchema(schema, { io: "input" }) as JsonSchema;
    return parameters;
  } catch (error) {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `tool '${name}': its schema cannot be written as JSON Schema`, {
      reason: error instanceof Error ? error.message : String(error),
      expected: "a zod object of JSON-representable fields",
    }, { cause: error });
  }
}
