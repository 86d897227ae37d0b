import { DEFAULT_TTL_MS, type Envelope, type Payload } from "./envelope.ts";
import type { HermesError } from "./hermes-error.ts";
import { newMessageId } from "./ids.ts";
import { MessageType } from "./message-types.ts";

/** Where a new envelope goes: exactly one of the three routing layers is usually set. */
export interface Route {
  target_agent?: string;
  topic?: string;
  capability?: string;
}

/** Optional fields a caller may set on a new request or event. */
export interface EnvelopeOptions {
  trace_id?: string;
  context_id?: string;
  priority?: number;
  ttl?: number;
  headers?: Record<string, string>;
}

/**
 * A new request envelope. `trace_id` defaults to the new message id, which starts a flow.
 *
 * @example
 * const req = createRequest("cli", { target_agent: "echo" }, { text: "hi" }, { ttl: 5000 });
 */
export function createRequest(source: string, route: Route, payload: Payload, options: EnvelopeOptions = {}): Envelope {
  const message_id = newMessageId();
  return {
    message_id,
    message_type: MessageType.REQUEST,
    trace_id: options.trace_id ?? message_id,
    source_agent: source,
    ...route,
    reply_to: source,
    ...(options.context_id !== undefined && { context_id: options.context_id }),
    ...(options.priority !== undefined && { priority: options.priority }),
    timestamp: Date.now(),
    ttl: options.ttl ?? DEFAULT_TTL_MS,
    ...(options.headers !== undefined && { headers: options.headers }),
    payload,
  };
}

/** A new event envelope (fire and forget, usually on a topic). */
export function createEvent(source: string, route: Route, payload: Payload, options: EnvelopeOptions = {}): Envelope {
  const message_id = newMessageId();
  return {
    message_id,
    message_type: MessageType.EVENT,
    trace_id: options.trace_id ?? message_id,
    source_agent: source,
    ...route,
    ...(options.context_id !== undefined && { context_id: options.context_id }),
    ...(options.priority !== undefined && { priority: options.priority }),
    timestamp: Date.now(),
    ttl: options.ttl ?? DEFAULT_TTL_MS,
    ...(options.headers !== undefined && { headers: options.headers }),
    payload,
  };
}

/**
 * An envelope answering `request`: same trace_id and context_id (never rewritten), addressed
 * to its reply_to, correlated by its message_id.
 */
export function createReply(
  type: typeof MessageType.RESPONSE | typeof MessageType.ERROR | typeof MessageType.PROGRESS,
  request: Pick<Envelope, "message_id" | "trace_id" | "reply_to" | "source_agent" | "context_id" | "priority" | "ttl">,
  source: string,
  payload: Payload,
): Envelope {
  return {
    message_id: newMessageId(),
    message_type: type,
    trace_id: request.trace_id,
    source_agent: source,
    target_agent: request.reply_to ?? request.source_agent,
    correlation_id: request.message_id,
    ...(request.context_id !== undefined && { context_id: request.context_id }),
    ...(request.priority !== undefined && { priority: request.priority }),
    timestamp: Date.now(),
    ttl: DEFAULT_TTL_MS,
    payload,
  };
}

/** An error envelope answering `request` with a coded error. */
export function createErrorReply(
  request: Parameters<typeof createReply>[1],
  source: string,
  error: HermesError,
): Envelope {
  return createReply(MessageType.ERROR, request, source, error.toPayload());
}

/** A cancel for a request this side sent earlier. */
export function createCancel(request: Pick<Envelope, "message_id" | "trace_id" | "target_agent" | "topic" | "capability" | "source_agent">, reason = "cancelled by sender"): Envelope {
  return {
    message_id: newMessageId(),
    message_type: MessageType.CANCEL,
    trace_id: request.trace_id,
    source_agent: request.source_agent,
    ...(request.target_agent !== undefined && { target_agent: request.target_agent }),
    ...(request.topic !== undefined && { topic: request.topic }),
    ...(request.capability !== undefined && { capability: request.capability }),
    correlation_id: request.message_id,
    timestamp: Date.now(),
    ttl: DEFAULT_TTL_MS,
    payload: { reason },
  };
}
