/** The agent loop with the real tool registry and memory, driven by the scripted model. */
import { describe, expect, test } from "bun:test";
import { AgentConfigSchema } from "../../src/agent/agent-config.ts";
import { runAgent } from "../../src/agent/agent-loop.ts";
import { ScriptedModel } from "../../src/agent/scripted-model.ts";
import { ShortTermMemory } from "../../src/agent/short-term-memory.ts";
import { ToolRegistry } from "../../src/agent/tool-registry.ts";
import { builtinTools } from "../../src/agent/tools/builtin-tools.ts";
import { ErrorCode } from "../../mesh/errors.ts";

const config = (extra: Record<string, unknown> = {}) =>
  AgentConfigSchema.parse({ name: "coder", system_prompt: "You write code.", model: "m", tools: ["calculator"], ...extra });
const task = (content: string, extra: Record<string, unknown> = {}) => ({ content, context_id: "ctx-1", trace_id: "trace-1", signal: new AbortController().signal, ...extra });
const tools = () => new ToolRegistry(builtinTools());

describe("runAgent", () => {
  test("a tool call is run through the registry and its result fed back; the answer ends the loop", async () => {
    const model = new ScriptedModel([{ tool_calls: [{ name: "calculator", arguments: { expression: "6*7" } }] }, "It is 42."]);
    const steps: unknown[] = [];
    const outcome = await runAgent(config(), { model, tools: tools(), memory: new ShortTermMemory() }, task("what is 6*7?", { progress: (s: unknown) => steps.push(s) }));
    expect(outcome).toMatchObject({ answer: "It is 42.", steps: 2, tool_calls: 1 });
    expect(outcome.usage.total_tokens).toBeGreaterThan(0);
    const second = model.requests[1]!;
    const toolMessage = second.messages.find((m) => m.role === "tool")!;
    expect(JSON.parse(toolMessage.content!)).toEqual({ ok: true, result: 42 });
    expect(second.tools?.map((t) => t.name)).toEqual(["calculator"]);
    expect(second.agent).toBe("coder");
    expect(steps).toEqual([{ agent: "coder", step: 1, kind: "tools", tools: ["calculator"] }, { agent: "coder", step: 2, kind: "answer" }]);
  });

  test("a malformed call comes back to the model as a coded error it can correct", async () => {
    const model = new ScriptedModel([
      { tool_calls: [{ name: "calculator", arguments: '{"expresion": "1+1"' }] },
      { tool_calls: [{ name: "calculator", arguments: { expression: "1+1" } }] },
      "2",
    ]);
    const outcome = await runAgent(config(), { model, tools: tools(), memory: new ShortTermMemory() }, task("1+1?"));
    expect(outcome.answer).toBe("2");
    const firstResult = JSON.parse(model.requests[1]!.messages.find((m) => m.role === "tool")!.content!);
    expect(firstResult.ok).toBe(false);
    expect(firstResult.error.error_code).toBe(ErrorCode.INVALID_REQUEST);
  });

  test("tools outside the agent's list are refused with code 4 naming the allowed ones", async () => {
    const model = new ScriptedModel([{ tool_calls: [{ name: "file_write", arguments: { path: "x", content: "y" } }] }, "ok"]);
    await runAgent(config(), { model, tools: tools(), memory: new ShortTermMemory() }, task("write"));
    const result = JSON.parse(model.requests[1]!.messages.find((m) => m.role === "tool")!.content!);
    expect(result.error).toMatchObject({ error_code: 4, available_tools: ["calculator"] });
  });

  test("several tool calls of one turn run in parallel, and all results are returned in order", async () => {
    const model = new ScriptedModel([
      { tool_calls: [1, 2, 3].map((n) => ({ name: "calculator", arguments: { expression: `${n}*10` }, id: `c${n}` })) },
      "done",
    ]);
    const outcome = await runAgent(config(), { model, tools: tools(), memory: new ShortTermMemory() }, task("three"));
    expect(outcome.tool_calls).toBe(3);
    const results = model.requests[1]!.messages.filter((m) => m.role === "tool");
    expect(results.map((m) => [m.tool_call_id, JSON.parse(m.content!).result])).toEqual([["c1", 10], ["c2", 20], ["c3", 30]]);
  });

  test("the step limit ends a loop that never answers, with code 6", async () => {
    const model = new ScriptedModel(Array.from({ length: 3 }, () => ({ tool_calls: [{ name: "calculator", arguments: { expression: "1" } }] })));
    const error = await runAgent(config({ max_steps: 3 }), { model, tools: tools(), memory: new ShortTermMemory() }, task("loop")).catch((e) => e);
    expect(error.code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
    expect(error.fields).toMatchObject({ resource: "agent_steps", limit: 3 });
  });

  test("short-term memory carries a conversation across tasks in one context, not across contexts", async () => {
    const model = new ScriptedModel(["first answer", "second answer", "other context"]);
    const memory = new ShortTermMemory();
    const deps = { model, tools: tools(), memory };
    await runAgent(config({ tools: [] }), deps, task("my name is Ada"));
    await runAgent(config({ tools: [] }), deps, task("what is my name?"));
    await runAgent(config({ tools: [] }), deps, task("hello", { context_id: "ctx-2" }));
    const seen = (i: number) => model.requests[i]!.messages.map((m) => m.content);
    expect(seen(1)).toEqual(["You write code.", "my name is Ada", "first answer", "what is my name?"]);
    expect(seen(2)).toEqual(["You write code.", "hello"]);
  });

  test("recalled facts and the context chain are in the prompt", async () => {
    const model = new ScriptedModel(["ok"]);
    const facts = { recall: (ns: string, q: string) => (ns === "project" && q.includes("deploy") ? [{ text: "deploys go through staging" }] : []) };
    await runAgent(config({ recall: { namespace: "project", limit: 2 } }), { model, tools: tools(), memory: new ShortTermMemory(), facts },
      task("how do we deploy?", { chain: [{ role: "system", content: "Original request: ship it" }] }));
    const contents = model.requests[0]!.messages.map((m) => m.content);
    expect(contents).toContain("Original request: ship it");
    expect(contents.some((c) => c?.includes("deploys go through staging"))).toBe(true);
  });
});
