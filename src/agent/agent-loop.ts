import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { AgentConfig } from "./agent-config.ts";
import type { ChatMessage, ChatModel, ToolCall, ToolSpec, Usage } from "./chat-types.ts";

/** The tool registry as the loop uses it (src/agent/tool-registry.ts). */
export interface ToolBox {
  list(allowed?: readonly string[]): ToolSpec[];
  call(
    name: string,
    rawArguments: string | object,
    ctx: {
      trace_id: string;
      signal: AbortSignal;
      onEvent?: (event: Record<string, unknown> & { event: string }) => void;
      onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
    },
    allowed?: readonly string[],
  ): Promise<{ ok: true; value: unknown; normalized?: string[] } | { ok: false; error: Record<string, unknown>; normalized?: string[] }>;
}

/** Short-term memory as the loop uses it (src/agent/short-term-memory.ts). */
export interface ConversationMemory {
  add(contextId: string, message: ChatMessage): unknown;
  messages(contextId: string): ChatMessage[];
}

/** Long-term recall as the loop uses it (src/agent/long-term-memory.ts). */
export interface FactRecall {
  recall(namespace: string, query: string, limit?: number): Array<{ text: string }>;
}

/** One task for an agent. */
export interface AgentTask {
  /** What the agent is asked, as the user turn. */
  content: string;
  context_id: string;
  trace_id: string;
  /** Earlier hops of a multi-hop task, oldest first (the original request first). */
  chain?: ChatMessage[];
  signal: AbortSignal;
  /** Progress to the requester: one per step, and the progress a running tool reports (`kind: "tool_progress"`). */
  progress?: (step: Record<string, unknown>) => void;
  /** tool_call / tool_result / model events for the event log. */
  onEvent?: (event: Record<string, unknown> & { event: string }) => void;
}

/** What an agent produced. */
export interface AgentOutcome {
  answer: string;
  /** The model that gave the answer, as it named itself ("scripted" for the scripted model). */
  model: string;
  /** The model's notice about its answers (see ChatResponse.notice), when it gave one. */
  notice?: string;
  steps: number;
  tool_calls: number;
  usage: Usage;
}

/**
 * The agent loop: prompt from the system prompt, the context chain, recalled facts, the
 * short-term memory of this context and the task; call the model; run the tool calls it asks
 * for (in parallel: they are independent by construction of one assistant turn) and feed the
 * results back; repeat until it answers without tool calls or the step limit is reached
 * (code 6, `resource: "agent_steps"`). A tool that fails returns its coded error to the model,
 * which can correct its call; only the model failing ends the task.
 *
 * @example
 * const outcome = await runAgent(config, { model, tools, memory }, { content: "2+2?", context_id, trace_id, signal });
 */
export async function runAgent(
  config: AgentConfig,
  deps: { model: ChatModel; tools: ToolBox; memory: ConversationMemory; facts?: FactRecall },
  task: AgentTask,
): Promise<AgentOutcome> {
  const usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const specs = config.tools.length > 0 ? deps.tools.list(config.tools) : [];
  const recalled = config.recall.namespace && config.recall.limit > 0 && deps.facts ? deps.facts.recall(config.recall.namespace, task.content, config.recall.limit) : [];
  const prompt: ChatMessage[] = [
    { role: "system", content: config.system_prompt },
    ...(task.chain ?? []),
    ...(recalled.length > 0 ? [{ role: "system" as const, content: `Known facts:\n${recalled.map((f) => `- ${f.text}`).join("\n")}` }] : []),
    ...deps.memory.messages(task.context_id),
  ];
  const user: ChatMessage = { role: "user", content: task.content };
  const turn: ChatMessage[] = [user];
  deps.memory.add(task.context_id, user);
  let toolCalls = 0;
  for (let step = 1; step <= config.max_steps; step++) {
    if (task.signal.aborted) throw HermesError.from(task.signal.reason ?? new HermesError(ErrorCode.TASK_TIMEOUT, "cancelled"), ErrorCode.TASK_TIMEOUT);
    const response = await deps.model.complete({
      model: config.model,
      messages: [...prompt, ...turn],
      ...(specs.length > 0 && { tools: specs }),
      temperature: config.temperature,
      signal: task.signal,
      trace_id: task.trace_id,
      agent: config.name,
    });
    usage.prompt_tokens += response.usage.prompt_tokens;
    usage.completion_tokens += response.usage.completion_tokens;
    usage.total_tokens += response.usage.total_tokens;
    const reply = response.message;
    turn.push(reply);
    deps.memory.add(task.context_id, reply);
    const calls = reply.tool_calls ?? [];
    task.onEvent?.({ event: "model", agent: config.name, step, finish_reason: response.finish_reason, tool_calls: calls.length, tokens: response.usage.total_tokens });
    if (calls.length === 0) {
      task.progress?.({ agent: config.name, step, kind: "answer" });
      return { answer: reply.content ?? "", model: response.model, ...(response.notice !== undefined && { notice: response.notice }), steps: step, tool_calls: toolCalls, usage };
    }
    task.progress?.({ agent: config.name, step, kind: "tools", tools: calls.map((c) => c.name) });
    toolCalls += calls.length;
    const results = await Promise.all(calls.map((call) => runTool(deps.tools, call, config, task, step)));
    for (const message of results) {
      turn.push(message);
      deps.memory.add(task.context_id, message);
    }
  }
  throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, `${config.name} reached its step limit of ${config.max_steps} without an answer`, {
    resource: "agent_steps",
    used: config.max_steps,
    limit: config.max_steps,
  });
}

async function runTool(tools: ToolBox, call: ToolCall, config: AgentConfig, task: AgentTask, step: number): Promise<ChatMessage> {
  const progress = task.progress;
  const result = await tools.call(call.name, call.arguments, {
    trace_id: task.trace_id,
    signal: task.signal,
    ...(task.onEvent && { onEvent: task.onEvent }),
    ...(progress && { onProgress: (p) => progress({ agent: config.name, step, kind: "tool_progress", tool: call.name, ...p }) }),
  }, config.tools);
  const content = result.ok ? JSON.stringify({ ok: true, result: result.value }) : JSON.stringify({ ok: false, error: result.error });
  return { role: "tool", tool_call_id: call.id, name: call.name, content };
}
