/** ToolRegistry: listing, unknown and refused tools, code 2 messages, timeouts, cancellation, throws, events. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import type { ToolBox } from "../../src/agent/agent-loop.ts";
import { defineTool, ToolRegistry, type ToolContext, type ToolEvent, type ToolResult } from "../../src/agent/tool-registry.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

const repeat = defineTool({
  name: "repeat",
  description: "Repeats a word",
  schema: z.object({
    word: z.string().min(1).describe("the word"),
    count: z.number().int().min(1).max(10).describe("how many times"),
    format: z.enum(["json", "text"]).default("text"),
  }),
  run: ({ word, count, format }) => (format === "json" ? Array(count).fill(word) : word.repeat(count)),
});
const echo = defineTool({ name: "echo", description: "Echoes", schema: z.object({ text: z.string() }), run: ({ text }) => text });

function context(overrides: Partial<ToolContext> = {}): ToolContext & { events: ToolEvent[] } {
  const events: ToolEvent[] = [];
  return { trace_id: "trace-1", signal: new AbortController().signal, onEvent: (e) => events.push(e), events, ...overrides };
}

function failure(result: ToolResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
  return result.error;
}

describe("listing", () => {
  const registry = new ToolRegistry([repeat, echo]);

  test("lists every tool as a ToolSpec, or only the allowed ones", () => {
    expect(registry.list().map((t) => t.name)).toEqual(["repeat", "echo"]);
    expect(registry.list(["echo", "not-registered"])).toEqual([echo.spec]);
    expect(registry.list([])).toEqual([]);
    expect(registry.get("repeat")).toBe(repeat);
  });

  test("a second tool of the same name is refused", () => {
    expect(() => registry.register(defineTool({ ...echo }))).toThrow("already registered");
  });

  test("is what the agent loop expects of a tool box", () => {
    const box: ToolBox = registry; // a compile-time check, run by tsc
    expect(box.list(["echo"])).toHaveLength(1);
  });
});

describe("calls", () => {
  const registry = new ToolRegistry([repeat, echo]);

  test("runs with validated arguments, and reports what was normalised", async () => {
    const ctx = context();
    const result = await registry.call("repeat", '{"word": "ab", "count": "3 times", "format": "JSON格式"}', ctx);
    expect(result).toEqual({
      ok: true,
      value: ["ab", "ab", "ab"],
      normalized: ['count: "3 times" → 3 (number in text)', 'format: "JSON格式" → "json" (enum member inside the text)'],
    });
    expect(ctx.events.map((e) => e.event)).toEqual(["tool_call", "tool_result"]);
    expect(ctx.events[1]).toMatchObject({ tool: "repeat", trace_id: "trace-1", ok: true, normalized: result.normalized });
    expect(ctx.events[1]!.ms).toBeGreaterThanOrEqual(0);
  });

  test("an unknown tool is code 4 with the tools available", async () => {
    const error = failure(await registry.call("repeet", "{}", context()));
    expect(error).toMatchObject({ error_code: ErrorCode.TOOL_NOT_FOUND, error_name: "TOOL_NOT_FOUND", requested_tool: "repeet", available_tools: ["repeat", "echo"] });
  });

  test("with an allowed list, code 4 lists only the allowed tools", async () => {
    const error = failure(await registry.call("repeet", "{}", context(), ["echo"]));
    expect(error.available_tools).toEqual(["echo"]);
  });

  test("a registered tool outside the allowed list is refused with code 4, and never runs", async () => {
    let ran = false;
    const guarded = new ToolRegistry([echo, defineTool({ name: "danger", description: "d", schema: z.object({}), run: () => (ran = true) })]);
    const ctx = context();
    const error = failure(await guarded.call("danger", "{}", ctx, ["echo"]));
    expect(error).toMatchObject({ error_code: ErrorCode.TOOL_NOT_FOUND, requested_tool: "danger", available_tools: ["echo"], reason: "not in the agent's allowed tools" });
    expect(ran).toBe(false);
    expect(ctx.events[1]).toMatchObject({ event: "tool_result", ok: false, error_code: ErrorCode.TOOL_NOT_FOUND });
  });

  test("invalid arguments are code 2 naming each field, with what is expected and what came", async () => {
    const error = failure(await registry.call("repeat", { word: "", count: 40, format: "xml" }, context()));
    expect(error.error_code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error.detail).toBe("invalid arguments for tool 'repeat': word, count, format");
    const reason = String(error.reason);
    expect(reason).toContain("word: Too small");
    expect(reason).toContain("count: Too big");
    expect(reason).toContain("(got 40)");
    expect(reason).toContain('format: Invalid option');
    expect(error.expected).toBe('word: string, at least 1 character (the word); count: integer ≥ 1 ≤ 10 (how many times); format: one of "json", "text"');
    expect(error.fields).toEqual([
      expect.objectContaining({ field: "word", received: "" }),
      expect.objectContaining({ field: "count", expected: "integer ≥ 1 ≤ 10 (how many times)", received: 40 }),
      expect.objectContaining({ field: "format", received: "xml" }),
    ]);
  });

  test("a missing field is named as missing, and a misspelt one as unknown", async () => {
    const error = failure(await registry.call("repeat", '{"word": "a", "cuont": 2}', context()));
    expect(error.reason).toBe("count: is required but missing; unknown fields ignored: cuont (fields are word, count, format?)");
    expect(error.expected).toBe("count: integer ≥ 1 ≤ 10 (how many times)");
  });

  test("arguments that are not JSON are code 2, with the shape expected", async () => {
    const error = failure(await registry.call("repeat", "word=a count=2", context()));
    expect(error).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, detail: "arguments are not JSON", expected: "a JSON object with word, count, format?" });
  });

  test("a lenient repair of the argument text is noted", async () => {
    const result = await registry.call("repeat", "{'word': 'x', 'count': 2,}", context());
    expect(result).toEqual({ ok: true, value: "xx", normalized: ["arguments: repaired JSON (single quotes, trailing comma)"] });
  });
});

describe("failures while running", () => {
  test("a tool that throws is code 7 with its message", async () => {
    const registry = new ToolRegistry([defineTool({ name: "boom", description: "d", schema: z.object({}), run: () => { throw new TypeError("kaput"); } })]);
    const error = failure(await registry.call("boom", {}, context()));
    expect(error).toMatchObject({ error_code: ErrorCode.INTERNAL, detail: "kaput" });
    expect(error).not.toHaveProperty("stack");
  });

  test("a tool that throws a HermesError keeps its code and fields", async () => {
    const registry = new ToolRegistry([
      defineTool({ name: "busy", description: "d", schema: z.object({}), run: async () => { throw new HermesError(ErrorCode.RATE_LIMIT_EXCEEDED, "slow down", { retry_after_ms: 50 }); } }),
    ]);
    expect(failure(await registry.call("busy", {}, context()))).toMatchObject({ error_code: ErrorCode.RATE_LIMIT_EXCEEDED, retry_after_ms: 50 });
  });

  test("a call past its deadline is code 3, and the tool's signal is aborted", async () => {
    const aborted = Promise.withResolvers<unknown>();
    const hang = defineTool({
      name: "hang",
      description: "never answers",
      schema: z.object({}),
      run: (_args, ctx) => {
        ctx.signal.addEventListener("abort", () => aborted.resolve(ctx.signal.reason));
        return new Promise(() => {}); // ignores its signal: the registry must not wait for it
      },
    });
    const ctx = context({ timeoutMs: 50 });
    const error = failure(await new ToolRegistry([hang]).call("hang", {}, ctx));
    expect(error).toMatchObject({ error_code: ErrorCode.TASK_TIMEOUT, timeout_ms: 50 });
    expect(await aborted.promise).toBeInstanceOf(HermesError);
    expect(ctx.events[1]).toMatchObject({ ok: false, error_code: ErrorCode.TASK_TIMEOUT });
    expect(ctx.events[1]!.ms).toBeGreaterThanOrEqual(45);
  });

  test("a caller that aborts ends the call at once: code 3 'cancelled', or the code of its reason", async () => {
    const started = Promise.withResolvers<void>();
    const wait = defineTool({ name: "wait", description: "d", schema: z.object({}), run: () => (started.resolve(), new Promise(() => {})) });
    const registry = new ToolRegistry([wait]);
    const controller = new AbortController();
    const pending = registry.call("wait", {}, context({ signal: controller.signal }));
    await started.promise;
    controller.abort();
    expect(failure(await pending)).toMatchObject({ error_code: ErrorCode.TASK_TIMEOUT, reason: "cancelled by the caller" });

    const expired = AbortSignal.abort(new HermesError(ErrorCode.TTL_EXPIRED, "ttl ran out", { ttl: 1 }));
    expect(failure(await registry.call("wait", {}, context({ signal: expired })))).toMatchObject({ error_code: ErrorCode.TTL_EXPIRED });
  });

  test("a listener that throws does not fail the call", async () => {
    const registry = new ToolRegistry([echo]);
    const result = await registry.call("echo", { text: "hi" }, context({ onEvent: () => { throw new Error("log down"); } }));
    expect(result).toEqual({ ok: true, value: "hi", normalized: [] });
  });
});
