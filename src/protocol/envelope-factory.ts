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
  return build(MessageType.REQUEST, source, route, payload, options, source);
}

/** A new event envelope (fire and forget, usually on a topic). */
export function createEvent(source: string, route: Route, payload: Payload, options: EnvelopeOptions = {}): Envelope {
  return build(MessageType.EVENT, source, route, payload, options, undefined);
}

/**
 * Builds an envelope with plain assignments in one fixed field order: no spreads (they cost
 * more than the rest of the envelope on the send path), no undefined fields on the wire, and
 * one object shape per field set, which the records codec turns into one structure.
 */
function build(
  type: MessageType,
  source: string,
  route: Route,
  payload: Payload,
  options: EnvelopeOptions,
  replyTo: string | undefined,
): Envelope {
  const message_id = newMessageId();
  const env = { message_id, message_type: type, trace_id: options.trace_id ?? message_id, source_agent: source } as Envelope;
  if (route.target_agent !== undefined) env.target_agent = route.target_agent;
  if (route.topic !== undefined) env.topic = route.topic;
  if (route.capability !== undefined) env.capability = route.capability;
  if (replyTo !== undefined) env.reply_to = replyTo;
  if (options.context_id !== undefined) env.context_id = options.context_id;
  if (options.priority !== undefined) env.priority = options.priority;
  env.timestamp = Date.now();
  env.ttl = options.ttl ?? DEFAULT_TTL_MS;
  if (options.headers !== undefined) env.headers = options.headers;
  env.payload = payload;
  return env;
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
