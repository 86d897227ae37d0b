/**
 * The OpenAI chat-completions wire format, both ways: a ChatRequest into the JSON body the
 * endpoint expects, and the endpoint's JSON back into a ChatResponse. Kept apart from the HTTP
 * client so the mapping can be read (and tested) on its own.
 */
import { z } from "zod";
import type { ChatMessage, ChatRequest, ChatResponse, ToolCall } from "./chat-types.ts";

/**
 * The JSON body of `POST /chat/completions` for a request. Tool calls become
 * `{ id, type: "function", function: { name, arguments } }`, tool results carry `tool_call_id`,
 * tools become `{ type: "function", function: { name, description, parameters } }`; fields the
 * request leaves out are left out of the body too, so the server's defaults apply.
 *
 * @example
 * toWireRequest({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
 * // { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }
 */
export function toWireRequest(request: ChatRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { model: request.model, messages: request.messages.map(toWireMessage) };
  if (request.tools?.length) {
    body.tools = request.tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.max_tokens !== undefined) body.max_tokens = request.max_tokens;
  return body;
}

function toWireMessage(message: ChatMessage): Record<string, unknown> {
  if (message.role === "tool") {
    // The API wants a string here, and a tool_call_id to pair it with the assistant's call.
    return { role: "tool", content: message.content ?? "", tool_call_id: message.tool_call_id };
  }
  const wire: Record<string, unknown> = { role: message.role, content: message.content };
  if (message.name !== undefined) wire.name = message.name;
  if (message.role === "assistant" && message.tool_calls?.length) {
    wire.tool_calls = message.tool_calls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  return wire;
}

// Lenient where servers differ (missing usage, content as parts, arguments as an object), strict
// where the answer would be meaningless (no choices, no message).
const Text = z.union([z.string(), z.array(z.object({ text: z.string().optional() }).loose())]).nullish();
const WireToolCall = z.object({
  id: z.string().optional(),
  function: z.object({ name: z.string(), arguments: z.unknown().optional() }).loose(),
}).loose();
const WireCompletion = z.object({
  model: z.string().optional(),
  choices: z.array(z.object({
    finish_reason: z.string().nullish(),
    message: z.object({ content: Text, tool_calls: z.array(WireToolCall).nullish() }).loose(),
  }).loose()).min(1),
  usage: z.object({
    prompt_tokens: z.number().optional(),
    completion_tokens: z.number().optional(),
    total_tokens: z.number().optional(),
  }).loose().nullish(),
}).loose();

/**
 * Reads a chat-completions JSON body into a ChatResponse: `choices[0].message` with its
 * content and tool calls (arguments kept as the JSON text the model wrote), `finish_reason`
 * and `usage` (zeros when the server sends none). Returns an error string when the body is not
 * a chat completion.
 *
 * @example
 * fromWireResponse(json, "gpt-4o-mini").message.tool_calls?.[0].arguments; // '{"expression":"2+2"}'
 */
export function fromWireResponse(json: unknown, requestedModel: string): ChatResponse | string {
  const parsed = WireCompletion.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return `${issue.path.join(".") || "body"}: ${issue.message}`;
  }
  const { choices, usage, model } = parsed.data;
  const choice = choices[0]!;
  const raw = choice.message.content;
  const content = Array.isArray(raw) ? raw.map((part) => part.text ?? "").join("") : (raw ?? null);
  const message: ChatMessage = { role: "assistant", content };
  const calls = choice.message.tool_calls ?? [];
  if (calls.length) {
    message.tool_calls = calls.map((call, i): ToolCall => ({
      id: call.id ?? `call_${i}`,
      name: call.function.name,
      arguments: typeof call.function.arguments === "string" ? call.function.arguments : JSON.stringify(call.function.arguments ?? {}),
    }));
  }
  const prompt = usage?.prompt_tokens ?? 0;
  const completion = usage?.completion_tokens ?? 0;
  return {
    message,
    model: model ?? requestedModel,
    finish_reason: choice.finish_reason ?? (calls.length ? "tool_calls" : "stop"),
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: usage?.total_tokens ?? prompt + completion },
  };
}
