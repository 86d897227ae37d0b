/** The scripted model: turns in order, tracks per agent and per message, function turns, loud exhaustion, script files, its notice. */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChatRequest } from "../../src/agent/chat-types.ts";
import { loadAgentsFile, scriptedProviderNotice } from "../../src/agent/agent-config.ts";
import { loadScript, parseScript } from "../../src/agent/script-file.ts";
import { ScriptedModel } from "../../src/agent/scripted-model.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

const ACTORS = join(import.meta.dir, "../../actors");
const AGENTS_FILE = join(ACTORS, "agents.yaml");
const ask = (content: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({ model: "m", messages: [{ role: "user", content }], ...extra });

async function rejection(promise: Promise<unknown>): Promise<HermesError> {
  const error = await promise.then((v) => new Error(`expected a rejection, got ${JSON.stringify(v)}`), (e: unknown) => e);
  if (!(error instanceof HermesError)) throw error;
  return error;
}

describe("ScriptedModel", () => {
  test("plays turns in order: replies, tool calls (objects and raw text), plausible usage", async () => {
    const model = new ScriptedModel([
      { tool_calls: [{ name: "calculator", arguments: { expression: "6*7" } }, { name: "calculator", arguments: "{oops", id: "bad" }] },
      "It is 42.",
    ]);
    const first = await model.complete(ask("What is 6*7?"));
    expect(first.finish_reason).toBe("tool_calls");
    expect(first.message).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_track_1_1_1", name: "calculator", arguments: '{"expression":"6*7"}' }, { id: "bad", name: "calculator", arguments: "{oops" }],
    });
    const second = await model.complete(ask("What is 6*7?"));
    expect(second).toMatchObject({ message: { role: "assistant", content: "It is 42." }, finish_reason: "stop", model: "scripted" });
    expect(second.usage.completion_tokens).toBe(3); // 9 characters / 4, rounded up
    expect(second.usage.prompt_tokens).toBeGreaterThan(0);
    expect(second.usage.total_tokens).toBe(second.usage.prompt_tokens + second.usage.completion_tokens);
    expect(model.requests).toHaveLength(2);
    expect(model.unused()).toEqual([]);
  });

  test("every response says it is scripted: model 'scripted' and a notice (generic, or the one given)", async () => {
    const plain = await new ScriptedModel(["hi"]).complete(ask("Write me a web server", { model: "gpt-4o" }));
    expect(plain.model).toBe("scripted");
    expect(plain.notice).toBe("scripted reply (scripted model 'scripted'): played from a script whatever was asked, not a model's answer to this request");
    const told = new ScriptedModel({ name: "demo", notice: "see agents.yaml", tracks: [{ turns: [{ tool_calls: [{ name: "calculator" }] }, "done"] }] });
    expect(await told.complete(ask("x"))).toMatchObject({ finish_reason: "tool_calls", notice: "see agents.yaml" });
    expect(await told.complete(ask("x"))).toMatchObject({ message: { content: "done" }, notice: "see agents.yaml" });
  });

  test("the agents' notice names the settings that point them at a real OpenAI-compatible endpoint", () => {
    const notice = scriptedProviderNotice(loadAgentsFile(AGENTS_FILE));
    expect(notice).toStartWith("Scripted answer, not about your request:");
    expect(notice).toContain(`provider.kind: scripted in ${AGENTS_FILE}, replaying ${join(ACTORS, "agent-script.yaml")}`);
    expect(notice).toContain(`set in ${AGENTS_FILE}: provider.kind: openai, and provider.base_url`);
    expect(notice).toContain("http://127.0.0.1:11434/v1 (Ollama)");
    expect(notice).toContain("http://127.0.0.1:8080/v1 (llama.cpp server)");
    expect(notice).toContain("$OPENAI_BASE_URL");
    expect(notice).toContain("$OPENAI_API_KEY (provider.api_key_env");
    expect(notice).toContain("each agent's model:");
    expect(notice).toContain("HERMES_AGENTS_FILE");
    // The key variable is the one the file names.
    expect(scriptedProviderNotice({ path: "a.yaml", provider: { ...loadAgentsFile(AGENTS_FILE).provider, api_key_env: "MY_KEY" } })).toContain("$MY_KEY (provider.api_key_env");
  });

  test("running out fails loudly with code 7, naming the model, the track and the turn", async () => {
    const model = new ScriptedModel({ name: "demo", tracks: [{ agent: "planner", turns: ["plan"] }] });
    await model.complete(ask("go", { agent: "planner" }));
    const error = await rejection(model.complete(ask("again please", { agent: "planner" })));
    expect(error.code).toBe(ErrorCode.INTERNAL);
    expect(error.message).toContain("scripted model 'demo': track 'planner' has 1 turns and turn 2 was asked for");
    expect(error.message).toContain('"again please"');
    expect(error.fields).toMatchObject({ model: "demo", track: "planner", turn: 2, turns: 1, reason: "script exhausted" });
    // and it stays exhausted: it never wraps around
    expect((await rejection(model.complete(ask("x", { agent: "planner" })))).fields.turn).toBe(3);
  });

  test("one script drives several agents: tracks by agent, by model, by the last user message", async () => {
    const model = new ScriptedModel({
      tracks: [
        { agent: "planner", turns: ["plan A", "plan B"] },
        { model: "reviewer-model", turns: ["APPROVED"] },
        { match: /refactor/i, turns: ["refactored"] },
        { match: "^write", turns: ["code 1", "code 2"] },
      ],
    });
    expect((await model.complete(ask("x", { agent: "planner" }))).message.content).toBe("plan A");
    expect((await model.complete(ask("Write a parser", { agent: "coder" }))).message.content).toBe("code 1");
    expect((await model.complete(ask("look", { model: "reviewer-model" }))).message.content).toBe("APPROVED");
    expect((await model.complete(ask("please REFACTOR this"))).message.content).toBe("refactored");
    expect((await model.complete(ask("y", { agent: "planner" }))).message.content).toBe("plan B");
    expect(model.unused()).toEqual(["track '/^write/i': 1 of 2 turns unplayed"]);
    const unmatched = await rejection(model.complete(ask("hello there")));
    expect(unmatched.code).toBe(ErrorCode.INTERNAL);
    expect(unmatched.message).toContain("no track matches");
    expect(unmatched.fields.known).toEqual(["planner", "reviewer-model", "/refactor/i", "/^write/i"]);
  });

  test("the match is on the LAST user message, not on earlier ones or on tool results", async () => {
    const model = new ScriptedModel({ tracks: [{ match: "second", turns: ["yes"] }] });
    const request: ChatRequest = {
      model: "m",
      messages: [
        { role: "user", content: "first" },
        { role: "assistant", content: "ok" },
        { role: "user", content: "second" },
        { role: "tool", tool_call_id: "c", content: "first" },
      ],
    };
    expect((await model.complete(request)).message.content).toBe("yes");
  });

  test("function turns see the request and their position; they may be async; their errors name the turn", async () => {
    const seen: Array<{ track: string; turn: number }> = [];
    const model = new ScriptedModel([
      (request, at) => {
        seen.push(at);
        const toolResult = request.messages.findLast((m) => m.role === "tool")?.content;
        return toolResult ? `The tool said ${toolResult}` : { tool_calls: [{ name: "lookup", arguments: { q: "x" } }] };
      },
      async (request, at) => {
        seen.push(at);
        return `${request.messages.length} messages so far`;
      },
      () => {
        throw new Error("script bug");
      },
    ]);
    expect((await model.complete(ask("q"))).message.tool_calls?.[0].name).toBe("lookup");
    expect((await model.complete(ask("q"))).message.content).toBe("1 messages so far");
    const error = await rejection(model.complete(ask("q")));
    expect(error.code).toBe(ErrorCode.INTERNAL);
    expect(error.message).toContain("turn 3 of track 'track 1' threw: script bug");
    expect(seen).toEqual([{ track: "track 1", turn: 1 }, { track: "track 1", turn: 2 }]);
  });

  test("error turns throw the scripted HermesError, so callers can be tested against model failures", async () => {
    const model = new ScriptedModel([{ error: { code: ErrorCode.RATE_LIMIT_EXCEEDED, message: "slow down" } }, "fine"]);
    const error = await rejection(model.complete(ask("x")));
    expect(error).toMatchObject({ code: ErrorCode.RATE_LIMIT_EXCEEDED, message: "slow down", fields: { turn: 1 } });
    expect((await model.complete(ask("x"))).message.content).toBe("fine");
  });

  test("cursor 'trace' plays a track from its start for every trace, so concurrent tasks do not share turns", async () => {
    const model = new ScriptedModel({ cursor: "trace", tracks: [{ turns: ["one", "two"] }] });
    const replies = await Promise.all(["a", "b", "a", "b"].map((trace_id) => model.complete(ask("x", { trace_id }))));
    expect(replies.map((r) => r.message.content)).toEqual(["one", "one", "two", "two"]);
    expect((await rejection(model.complete(ask("x", { trace_id: "a" })))).message).toContain("turn 3");
    await model.complete(ask("x", { trace_id: "c" }));
    expect(model.unused()).toEqual(["track 'track 1' (trace c): 1 of 2 turns unplayed"]);
  });

  test("a cancelled request is refused before a turn is used", async () => {
    const model = new ScriptedModel(["only"]);
    const error = await rejection(model.complete(ask("x", { signal: AbortSignal.abort() })));
    expect(error.code).toBe(ErrorCode.TASK_TIMEOUT);
    expect((await model.complete(ask("x"))).message.content).toBe("only");
  });
});

describe("script files", () => {
  const dir = mkdtempSync(join(tmpdir(), "hermes-script-"));
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("a YAML script drives the model: tracks, raw JSON arguments, errors", async () => {
    const path = write("demo.yaml", [
      "name: demo",
      "tracks:",
      "  - agent: coder",
      "    turns:",
      "      - tool_calls:",
      "          - name: calculator",
      "            arguments: { expression: '2+2' }",
      "          - name: calculator",
      "            arguments: '{\"expression\": 2+'",
      "      - reply: done",
      "  - match: hello",
      "    turns: [Hi!, { error: { code: 10, message: down } }]",
    ].join("\n"));
    const model = new ScriptedModel(loadScript(path));
    const calls = (await model.complete(ask("x", { agent: "coder" }))).message.tool_calls!;
    expect(calls.map((c) => c.arguments)).toEqual(['{"expression":"2+2"}', '{"expression": 2+']);
    expect((await model.complete(ask("x", { agent: "coder" }))).message.content).toBe("done");
    expect((await model.complete(ask("hello"))).message.content).toBe("Hi!");
    expect((await rejection(model.complete(ask("hello")))).code).toBe(ErrorCode.UNAVAILABLE);
    expect((await rejection(model.complete(ask("x", { agent: "coder" })))).message).toContain("scripted model 'demo'");
  });

  test("a JSON script, and a bare list of turns", async () => {
    const model = new ScriptedModel(loadScript(write("s.json", JSON.stringify({ cursor: "trace", turns: ["a", { reply: "b" }] }))));
    expect((await model.complete(ask("x"))).message.content).toBe("a");
    expect(parseScript("- one\n- reply: two\n", "list.yaml")).toEqual({ tracks: [{ turns: [{ reply: "one" }, { reply: "two" }] }] });
  });

  const bad: Array<[string, string, string]> = [
    ["a misspelt key", "turns:\n  - reply: hi\n  - tool_call: []\n", "bad.yaml:3: turns[1]: unknown key tool_call (expected one of: reply, tool_calls, error, finish_reason)"],
    ["a tool call without a name", "turns:\n  - tool_calls:\n      - arguments: {}\n", "bad.yaml:3: turns[0].tool_calls[0].name: expected a tool name"],
    ["an empty turn", "turns:\n  - {}\n", "bad.yaml:2: turns[0]: a turn needs reply, tool_calls or error"],
    ["a bad error code", "turns:\n  - error: { code: 42, message: x }\n", "turns[0].error.code: expected an error code from 1 to 11"],
    ["a bad regex", "tracks:\n  - match: '(unclosed'\n    turns: [x]\n", "bad.yaml:2: tracks[0].match: expected a valid regular expression"],
    ["both tracks and turns", "turns: [a]\ntracks: [{ turns: [b] }]\n", "expected either tracks or turns"],
    ["no turns", "tracks:\n  - agent: x\n", "tracks[0].turns: expected a list of turns"],
    ["broken YAML", "turns:\n  - reply: [unclosed\n", "bad.yaml:"],
  ];
  for (const [what, text, message] of bad) {
    test(`a bad file is refused with code 2 and where: ${what}`, () => {
      const path = write("bad.yaml", text);
      let error: unknown;
      try {
        loadScript(path);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(HermesError);
      expect((error as HermesError).code).toBe(ErrorCode.INVALID_REQUEST);
      expect((error as HermesError).message).toContain(message);
    });
  }

  test("a missing file is code 2 naming the path", () => {
    expect(() => loadScript(join(dir, "nope.yaml"))).toThrow(/script file .*nope\.yaml: cannot be read/);
  });
});
