import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { defineActor } from "../src/actor/define-actor.ts";
import { agentByName, loadAgentsFile, scriptedProviderNotice, type AgentConfig, type AgentsFile } from "../src/agent/agent-config.ts";
import { runAgent } from "../src/agent/agent-loop.ts";
import type { ChatMessage, ChatModel } from "../src/agent/chat-types.ts";
import { chainToMessages, readChain } from "../src/agent/context-chain.ts";
import { LongTermMemory } from "../src/agent/long-term-memory.ts";
import { mcpServersUsed, mountMcpServers, type McpMount } from "../src/agent/mcp-tools.ts";
import { OpenAICompatibleModel } from "../src/agent/openai-client.ts";
import { loadScript } from "../src/agent/script-file.ts";
import { ScriptedModel } from "../src/agent/scripted-model.ts";
import { ShortTermMemory } from "../src/agent/short-term-memory.ts";
import { ToolRegistry } from "../src/agent/tool-registry.ts";
import { builtinTools } from "../src/agent/tools/builtin-tools.ts";
import { ErrorCode, HermesError } from "../mesh/errors.ts";

/** Under the text of an answer that came with a notice: short, the notice itself is in `notice`. */
const SCRIPTED_MARK = "[scripted answer, not about your request: see `notice` for how to use a real model]";

interface AgentState {
  config: AgentConfig;
  model: ChatModel;
  tools: ToolRegistry;
  memory: ShortTermMemory;
  facts: LongTermMemory | undefined;
  mcp: McpMount | undefined;
}

/**
 * An LLM-driven agent as an ordinary supervised actor. Which agent it is comes from the actor's
 * name in the mesh file, looked up in the agents file ($HERMES_AGENTS_FILE, default
 * actors/agents.yaml): its system prompt, model, temperature and allowed tools. The provider
 * is the scripted model (offline, deterministic) or an OpenAI-compatible endpoint, unchanged
 * for the agent either way.
 *
 * Requests: `{ task, context_chain? }` runs the agent loop and answers
 * `{ answer, model, steps, tool_calls, usage }`, with a progress message per step; on the
 * scripted provider also `notice` (first), saying the answer is scripted and how to point the
 * agents at a real endpoint, and the answer text ends with a line saying so;
 * `{ op: "remember", text, meta? }` stores a long-term fact (agents with a recall namespace).
 * The MCP servers of the agents file that the agent's `tools:` name (`mcp.<server>.…`) are
 * started or reached at init, their tools registered, and closed when the actor stops.
 */
export default defineActor<AgentState>({
  concurrency: Number(process.env.AGENT_CONCURRENCY ?? 16),
  async init(ctx) {
    const file = loadAgentsFile(process.env.HERMES_AGENTS_FILE ?? join(import.meta.dirname, "agents.yaml"));
    const config = agentByName(file, ctx.name);
    const model = modelOf(file);
    const dataDir = join(process.env.HERMES_MESH_DIR ?? tmpdir(), "data");
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    mkdirSync(file.sandbox, { recursive: true, mode: 0o700 });
    const used = mcpServersUsed(config.tools);
    const mcp = used.length > 0 ? await mountMcpServers(Object.fromEntries(used.map((name) => [name, file.mcp_servers[name]!])), { log: ctx.log }) : undefined;
    try {
      return {
        config,
        model,
        tools: new ToolRegistry([...builtinTools({ sandboxDir: file.sandbox, allowedOrigins: file.http_allow }), ...(mcp?.tools ?? [])]),
        memory: new ShortTermMemory({ limit: config.memory.limit, keep: config.memory.keep, summarise: summariser(model, config) }),
        facts: config.recall.namespace ? LongTermMemory.open(join(dataDir, `${ctx.name}-facts.db`)) : undefined,
        mcp,
      };
    } catch (error) {
      // No onStop follows a failed init: the stdio servers would live on until the process exits.
      await mcp?.close();
      throw error;
    }
  },
  async onRequest(request, ctx) {
    const { config, model, tools, memory, facts } = ctx.state;
    const p = request.payload;
    if (p.op === "remember") {
      if (!facts || !config.recall.namespace) throw new HermesError(ErrorCode.INVALID_REQUEST, `${config.name} has no long-term memory (recall.namespace)`, { reason: "no recall namespace" });
      if (typeof p.text !== "string") throw new HermesError(ErrorCode.INVALID_REQUEST, "remember needs `text`", { reason: "missing text", expected: { text: "string" } });
      return { id: facts.remember(config.recall.namespace, p.text, (p.meta as Record<string, unknown>) ?? {}) };
    }
    const task = p.task ?? p.request ?? p.prompt;
    if (typeof task !== "string" || !task.trim()) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, `${config.name} needs a \`task\` text`, { reason: "missing task", expected: { task: "string", context_chain: "optional" } });
    }
    const chain = readChain(p);
    const outcome = await runAgent(config, { model, tools, memory, ...(facts && { facts }) }, {
      content: task,
      context_id: request.context_id ?? request.message_id,
      trace_id: request.trace_id,
      ...(chain && { chain: chainToMessages(chain) }),
      signal: ctx.signal,
      progress: (step) => ctx.progress(step),
      onEvent: (event) => ctx.record(event),
    });
    // A notice (the scripted provider's) goes first in the answer, and under the answer text too.
    const answer = outcome.notice === undefined ? outcome.answer : `${outcome.answer.trimEnd()}\n\n${SCRIPTED_MARK}`;
    return {
      ...(outcome.notice !== undefined && { notice: outcome.notice }),
      model: outcome.model,
      answer,
      steps: outcome.steps,
      tool_calls: outcome.tool_calls,
      usage: { ...outcome.usage },
    };
  },
  async onStop(ctx) {
    ctx.state.facts?.close();
    await ctx.state.mcp?.close();
  },
});

function modelOf(file: AgentsFile): ChatModel {
  if (file.provider.kind === "openai") {
    return new OpenAICompatibleModel({
      ...(file.provider.base_url && { baseUrl: file.provider.base_url }),
      apiKey: process.env[file.provider.api_key_env] ?? "",
      timeoutMs: file.provider.timeout_ms,
    });
  }
  if (!file.provider.script) throw new HermesError(ErrorCode.INVALID_REQUEST, `${file.path}: the scripted provider needs provider.script`, { reason: "no script" });
  const scripted = new ScriptedModel({ ...loadScript(file.provider.script), notice: scriptedProviderNotice(file) });
  const latency = file.provider.latency_ms;
  if (!latency) return scripted;
  // Simulated model latency, so demos and load tests see time pass as with a real model.
  return {
    name: scripted.name,
    async complete(request) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, latency);
        request.signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(HermesError.from(request.signal!.reason ?? new Error("cancelled"), ErrorCode.TASK_TIMEOUT));
        }, { once: true });
      });
      return scripted.complete(request);
    },
  };
}

/** Older turns of a long conversation are summarised by the agent's own model. */
function summariser(model: ChatModel, config: AgentConfig) {
  return async (messages: ChatMessage[], signal: AbortSignal) => {
    const text = messages.map((m) => `${m.role}: ${m.content ?? JSON.stringify(m.tool_calls ?? [])}`).join("\n");
    const response = await model.complete({
      model: config.model,
      agent: `${config.name}:summariser`,
      messages: [{ role: "system", content: "Summarise this conversation in a few bullet points, keeping decisions and open questions." }, { role: "user", content: text }],
      temperature: 0,
      signal,
    });
    return response.message.content ?? "";
  };
}
