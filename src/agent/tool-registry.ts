/**
 * The tool registry: the tools an agent may call, listed for the model as JSON Schema, and
 * one `call` that turns whatever the model wrote into a result or a coded error it can act on.
 */
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { ToolSpec } from "./chat-types.ts";
import { normalizeArguments, readArguments } from "./tool-arguments.ts";
import type { ToolContext, ToolDefinition, ToolEvent, ToolResult } from "./tool-definition.ts";
import { describeSchema, validateArguments } from "./tool-validation.ts";
export { defineTool, TOOL_NAME_PATTERN, type ToolContext, type ToolDefinition, type ToolEvent, type ToolProgress, type ToolResult } from "./tool-definition.ts";


/** Deadline of one tool call when the context gives none. */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

/**
 * Tools by name. `call` never throws: every failure is a `ToolResult` with a HermesError
 * payload, so the agent loop can hand it to the model as the tool's answer.
 *
 * | failure | code |
 * |---|---|
 * | unknown tool, or not in the caller's allowed list | 4, `requested_tool`, `available_tools` |
 * | arguments not JSON, or invalid after normalisation | 2, `reason`, `expected` |
 * | the call outlived `ctx.timeoutMs` (default 30 s) or was cancelled | 3, `timeout_ms` |
 * | the tool threw | its HermesError code, else 7 |
 *
 * @example
 * const tools = new ToolRegistry(builtinTools({ sandboxDir: "/tmp/agent" }));
 * tools.list(["calculator"]); // [{ name: "calculator", description: ..., parameters: {...} }]
 * await tools.call("calculator", '{"expression": "2+2"}', { trace_id, signal }); // { ok: true, value: 4, normalized: [] }
 */
export class ToolRegistry {
  #tools = new Map<string, ToolDefinition>();

  constructor(tools: Iterable<ToolDefinition> = []) {
    for (const tool of tools) this.register(tool);
  }

  /** Adds a tool; a second tool of the same name is refused (code 2). Returns the registry. */
  register(tool: ToolDefinition): this {
    if (this.#tools.has(tool.name)) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, `a tool named '${tool.name}' is already registered`, { reason: "tool names are unique in a registry" });
    }
    this.#tools.set(tool.name, tool);
    return this;
  }

  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name);
  }

  /**
   * Names of the registered tools, or of those among `allowed`, in registration order. An
   * `allowed` entry ending in `.*` grants every tool under that prefix (`mcp.github.*`).
   */
  names(allowed?: readonly string[]): string[] {
    const names = [...this.#tools.keys()];
    return allowed ? names.filter((name) => isAllowed(name, allowed)) : names;
  }

  /** The tools as the model sees them; only the `allowed` ones when a list is given. */
  list(allowed?: readonly string[]): ToolSpec[] {
    return this.names(allowed).map((name) => this.#tools.get(name)!.spec);
  }

  /**
   * Calls a tool: refuses unknown and not-allowed tools, reads and normalises the arguments,
   * validates them, runs the tool under a deadline, and reports tool_call / tool_result
   * through `ctx.onEvent`.
   */
  async call(name: string, rawArguments: string | object, ctx: ToolContext, allowed?: readonly string[]): Promise<ToolResult> {
    const started = performance.now();
    emit(ctx, { event: "tool_call", tool: name, trace_id: ctx.trace_id });
    const normalized: string[] = [];
    let result: ToolResult;
    try {
      const tool = this.#resolve(name, allowed);
      const expected = describeSchema(tool.parameters); // "object with a, b?"
      const read = readArguments(rawArguments, normalized, `a JSON ${expected}`);
      const shaped = normalizeArguments(tool.parameters, read);
      normalized.push(...shaped.normalized);
      const args = validateArguments(tool, shaped.value as Record<string, unknown>);
      result = { ok: true, value: await runWithDeadline(tool, args, ctx), normalized };
    } catch (error) {
      result = { ok: false, error: HermesError.from(error, ErrorCode.INTERNAL).toPayload(), normalized };
    }
    emit(ctx, {
      event: "tool_result",
      tool: name,
      trace_id: ctx.trace_id,
      ms: Math.round((performance.now() - started) * 1000) / 1000,
      ok: result.ok,
      ...(!result.ok && { error_code: result.error.error_code }),
      ...(normalized.length > 0 && { normalized }),
    });
    return result;
  }

  #resolve(name: string, allowed: readonly string[] | undefined): ToolDefinition {
    const tool = this.#tools.get(name);
    const available = this.names(allowed);
    if (!tool) {
      throw new HermesError(ErrorCode.TOOL_NOT_FOUND, `no tool named '${name}'`, { requested_tool: name, available_tools: available });
    }
    if (allowed && !isAllowed(name, allowed)) {
      throw new HermesError(ErrorCode.TOOL_NOT_FOUND, `tool '${name}' is not allowed for this agent`, {
        requested_tool: name,
        available_tools: available,
        reason: "not in the agent's allowed tools",
      });
    }
    return tool;
  }
}

function isAllowed(name: string, allowed: readonly string[]): boolean {
  return allowed.some((entry) => entry === name || (entry.endsWith(".*") && name.startsWith(entry.slice(0, -1))));
}

/**
 * Runs the tool with a signal that aborts on the caller's signal or the deadline, and stops
 * waiting at that moment: a tool that ignores its signal cannot hold the agent past the deadline.
 */
async function runWithDeadline(tool: ToolDefinition, args: unknown, ctx: ToolContext): Promise<unknown> {
  const timeoutMs = ctx.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  // A caller that aborts with a HermesError (a task's ttl ran out: code 9) keeps its code.
  const cancelled = () =>
    ctx.signal.reason instanceof HermesError
      ? ctx.signal.reason
      : new HermesError(ErrorCode.TASK_TIMEOUT, `tool '${tool.name}' was cancelled`, { reason: "cancelled by the caller" });
  if (ctx.signal.aborted) throw cancelled();
  const deadline = new AbortController();
  const stop = Promise.withResolvers<never>();
  const timer = setTimeout(() => {
    const error = new HermesError(ErrorCode.TASK_TIMEOUT, `tool '${tool.name}' did not finish within ${timeoutMs} ms`, { timeout_ms: timeoutMs });
    deadline.abort(error);
    stop.reject(error);
  }, timeoutMs);
  const onAbort = () => stop.reject(cancelled());
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  try {
    const signal = AbortSignal.any([ctx.signal, deadline.signal]);
    const running = Promise.resolve().then(() => tool.run(args as never, { ...ctx, signal }));
    return await Promise.race([running, stop.promise]);
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener("abort", onAbort);
  }
}

/** A failing event listener must not fail the call it reports on. */
function emit(ctx: ToolContext, event: ToolEvent): void {
  try {
    ctx.onEvent?.(event);
  } catch {
    // the log is best effort
  }
}
