/**
 * The planner → coder → reviewer pipeline across real actor processes: end to end with the
 * scripted model, a coder killed mid-task, 100 concurrent runs through the gateway, and the
 * same agents unchanged against an OpenAI-compatible endpoint over real HTTP.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir, waitFor } from "../helpers.ts";
import { ACTORS, startTestMesh } from "../actor/mesh-harness.ts";
import { startFakeOpenAI } from "./fake-openai-server.ts";

const AGENTS = (provider: string) => `
provider:
${provider}
sandbox: "{mesh}/sandbox"
agents:
  - { name: planner, system_prompt: "Plan it.", model: m-plan }
  - { name: coder, system_prompt: "Code it.", model: m-code, tools: [calculator, file_write] }
  - { name: reviewer, system_prompt: "Review it.", model: m-review }
`;
const MESH = (heartbeat = 1000) => `
mesh:
  name: pipeline-test
  heartbeat_ms: ${heartbeat}
supervisor:
  intensity: 10
  backoff: { initial_ms: 1, max_ms: 10 }
  children:
    - actor: planner
      module: {ACTORS}/agent.ts
      capabilities: [plan]
    - actor: coder
      module: {ACTORS}/agent.ts
      capabilities: [code]
    - actor: reviewer
      module: {ACTORS}/agent.ts
      capabilities: [review]
    - actor: pipeline
      module: {ACTORS}/pipeline.ts
`;
const REQUEST = { request: "Write a function that returns the number of days between two dates" };

/** Points the agent actors at an agents file for the duration of a test. */
function useAgentsFile(text: string): { [Symbol.dispose](): void } {
  const dir = tempDir("hm-agents-");
  const file = join(dir.path, "agents.yaml");
  writeFileSync(file, text.replace("{SCRIPT}", join(ACTORS, "agent-script.yaml")));
  const before = process.env.HERMES_AGENTS_FILE;
  process.env.HERMES_AGENTS_FILE = file;
  return {
    [Symbol.dispose]() {
      if (before === undefined) delete process.env.HERMES_AGENTS_FILE;
      else process.env.HERMES_AGENTS_FILE = before;
      dir[Symbol.dispose]();
    },
  };
}

describe("agent pipeline", () => {
  test("runs end to end with the scripted model: plan, code with tools, a review round trip, approval", async () => {
    using _agents = useAgentsFile(AGENTS("  kind: scripted\n  script: {SCRIPT}"));
    await using t = await startTestMesh(MESH());
    const client = await t.client();
    const stages: string[] = [];
    const reply = await client.request("pipeline", REQUEST, { timeoutMs: 20_000, onProgress: (p) => stages.push(`${p.stage}${p.round ?? ""}`) });
    expect(reply.payload).toMatchObject({ approved: true, rounds: 2, review: expect.stringMatching(/^APPROVED/) });
    expect(String(reply.payload.result)).toContain('"""Number of whole days');
    expect(stages).toEqual(["plan", "code1", "review1", "code2", "review2"]);
    expect(await Bun.file(join(t.dir, "sandbox", "solution.py")).text()).toContain("def days_between");
    // The script's answer is not about the request, and says so: first in the answer, with the
    // settings that point the agents at a real OpenAI-compatible endpoint.
    expect(Object.keys(reply.payload).slice(0, 2)).toEqual(["notice", "model"]);
    expect(reply.payload.model).toBe("scripted");
    const notice = String(reply.payload.notice);
    expect(notice).toStartWith("Scripted answer, not about your request:");
    expect(notice).toContain(`set in ${process.env.HERMES_AGENTS_FILE}: provider.kind: openai, and provider.base_url`);
    expect(notice).toContain("http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8080/v1 (llama.cpp server)");
    expect(notice).toContain("$OPENAI_API_KEY");
  }, 30_000);

  test("an agent on the scripted provider asked something else: the script's answer, marked as such, with the notice", async () => {
    using _agents = useAgentsFile(AGENTS("  kind: scripted\n  script: {SCRIPT}"));
    await using t = await startTestMesh(MESH());
    const client = await t.client();
    const reply = await client.request("planner", { task: "Write a web server in Go" }, { timeoutMs: 20_000 });
    expect(reply.payload).toMatchObject({ model: "scripted", notice: expect.stringContaining("provider.base_url") });
    expect(String(reply.payload.answer)).toStartWith("1. Write a function days_between(a, b)");
    expect(String(reply.payload.answer)).toEndWith("\n\n[scripted answer, not about your request: see `notice` for how to use a real model]");
  }, 30_000);

  test("a coder killed with SIGKILL mid-task: the run still completes after the restart, with one answer", async () => {
    using _agents = useAgentsFile(AGENTS("  kind: scripted\n  script: {SCRIPT}\n  latency_ms: 400"));
    await using t = await startTestMesh(MESH(50));
    const client = await t.client();
    const coder = t.pid("coder");
    let answers = 0;
    const run = client.request("pipeline", REQUEST, { timeoutMs: 30_000 }).then((r) => {
      answers++;
      return r;
    });
    await waitFor(() => (t.mesh.registry.byAddress("coder")?.inFlight ?? 0) > 0, "the coder to be working", 10_000);
    process.kill(coder, "SIGKILL");
    const reply = await run;
    expect(reply.payload).toMatchObject({ approved: true });
    expect(answers).toBe(1);
    expect(t.mesh.registry.byAddress("coder")!.restarts).toBe(1);
    expect(t.pid("coder")).not.toBe(coder);
  }, 40_000);

  test("100 concurrent pipeline requests through the gateway: every one answered once, none duplicated", async () => {
    using _agents = useAgentsFile(AGENTS("  kind: scripted\n  script: {SCRIPT}\n  latency_ms: 20"));
    await using t = await startTestMesh(MESH(), { gateway: { port: 0 } });
    const url = `${t.mesh.gateway!.url}/hermes/v1/invoke`;
    const started = performance.now();
    const times: number[] = [];
    const replies = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const t0 = performance.now();
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/hermes+json" },
          body: JSON.stringify({ meta: { version: "1.2", msg_type: 1, sender_id: `user-${i}`, receiver_id: "pipeline", ttl: 60, trace_id: `load-${i}` }, payload: REQUEST }),
        });
        const body = (await response.json()) as any;
        times.push(performance.now() - t0);
        return { status: response.status, body };
      }),
    );
    const wall = performance.now() - started;
    expect(replies.every((r) => r.status === 200 && r.body.payload.approved === true)).toBe(true);
    expect(new Set(replies.map((r) => r.body.meta.trace_id)).size).toBe(100);
    expect(replies.map((r) => r.body.meta.receiver_id).sort()).toEqual(Array.from({ length: 100 }, (_, i) => `user-${i}`).sort());
    // The pipeline handled exactly 100 requests: none twice.
    await waitFor(async () => {
      const text = await (await fetch(`${t.mesh.gateway!.url}/metrics`)).text();
      return /hermes_messages_handled_total\{actor="pipeline",instance="pipeline",type="request"\} 100\b/.test(text);
    }, "the pipeline's counter at 100", 10_000);
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(99, Math.floor(q * 100))]!.toFixed(0);
    console.log(`100 concurrent pipeline runs (7 model calls each, 20 ms simulated model latency): p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, all done in ${wall.toFixed(0)} ms`);
  }, 60_000);

  test("the same agents run unchanged against an OpenAI-compatible endpoint over real HTTP", async () => {
    await using server = startFakeOpenAI();
    using _agents = useAgentsFile(AGENTS(`  kind: openai\n  base_url: ${server.url}\n  api_key_env: FAKE_OPENAI_KEY`));
    process.env.FAKE_OPENAI_KEY = "test-key";
    server.push(
      { kind: "text", content: "1. write it" },
      { kind: "tool_calls", calls: [{ id: "call_1", name: "calculator", arguments: '{"expression":"2+2"}' }] },
      { kind: "text", content: "def f(): return 4" },
      { kind: "text", content: "APPROVED: fine" },
    );
    await using t = await startTestMesh(MESH());
    const client = await t.client();
    const reply = await client.request("pipeline", REQUEST, { timeoutMs: 20_000 });
    expect(reply.payload).toMatchObject({ approved: true, rounds: 1, result: "def f(): return 4" });
    expect(reply.payload.notice).toBeUndefined(); // a real model's answer carries no notice
    expect(server.requests.map((r) => r.body.model)).toEqual(["m-plan", "m-code", "m-code", "m-review"]);
    expect(server.requests[0]!.headers.authorization).toBe("Bearer test-key");
    const toolTurn = server.requests[2]!.body.messages.find((m: any) => m.role === "tool");
    expect(toolTurn).toMatchObject({ tool_call_id: "call_1", content: JSON.stringify({ ok: true, result: 4 }) });
    delete process.env.FAKE_OPENAI_KEY;
  }, 30_000);
});
