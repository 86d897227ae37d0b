/**
 * The shapes the agent layer speaks: chat messages, tool calls and model clients, close to the
 * OpenAI chat-completions wire format so an OpenAI-compatible endpoint needs no translation.
 */

/** Who wrote a chat message. */
export type ChatRole = "system" | "user" | "assistant" | "tool";

/** A tool call as the model produced it: `arguments` is the JSON text it wrote, valid or not. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** One message of a conversation. */
export interface ChatMessage {
  role: ChatRole;
  content: string | null;
  /** Assistant messages: the tools it wants called. */
  tool_calls?: ToolCall[];
  /** Tool messages: the call this answers. */
  tool_call_id?: string;
  /** Tool messages: the tool's name. */
  name?: string;
}

/** A JSON Schema object (as derived from a zod schema). */
export type JsonSchema = Record<string, unknown>;

/** A tool as the model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** One call to a chat model. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  temperature?: number;
  max_tokens?: number;
  signal?: AbortSignal;
  /** For token and cost accounting per trace. */
  trace_id?: string;
  /** The agent asking (its name), so one scripted model can answer several agents by name. */
  agent?: string;
}

/** Tokens one call used. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** What a chat model answered. */
export interface ChatResponse {
  message: ChatMessage;
  usage: Usage;
  model: string;
  /** "stop", "tool_calls", "length", ... */
  finish_reason: string;
  /**
   * Set when the answer is not a model's answer to the request (the scripted model): what the
   * reader should know about it, passed on to whoever reads the agent's answer.
   */
  notice?: string;
}

/** Anything that completes chats: the OpenAI-compatible HTTP client, the scripted model. */
export interface ChatModel {
  readonly name: string;
  complete(request: ChatRequest): Promise<ChatResponse>;
}
