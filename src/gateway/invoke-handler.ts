import type { MeshNode } from "../../mesh/mesh-node.ts";
import type { Registry } from "../../mesh/registry.ts";
import type { EventLog } from "../observability/event-log.ts";
import { parseTraceparent, spanIdOf, traceHexOf } from "../observability/trace-context.ts";
import { parseEnvelope, createErrorReply, type Envelope, type Payload, HttpMsgType, MessageType } from "../../mesh/envelope.ts";
import { checkPayload } from "../../mesh/frames.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { newMessageId } from "../../mesh/ids.ts";
import { isMetaForm, metaErrorReply, metaReply, parseMetaForm, payloadFromJson, payloadToJson, routeOfMeta } from "./invoke-forms.ts";
import type { RecentTraces } from "./recent-traces.ts";

/** What the HTTP layer sends back. */
export interface InvokeResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/**
 * Turns what an HTTP or WebSocket client sent (a native envelope as JSON, or the meta/payload
 * form) into a request through the mesh, and its answer back into the same form
 * (docs/protocol.md §7). Malformed input is HTTP 400 with code 2; every routed answer, error
 * or not, is HTTP 200. The gateway's handling is a span of the trace: a W3C `traceparent` from
 * the caller becomes its parent, and the request it sends names it as theirs.
 */
export class InvokeHandler {
  #node: MeshNode;
  #registry: Registry;
  #recent: RecentTraces;
  #events: EventLog | undefined;

  constructor(node: MeshNode, registry: Registry, recent: RecentTraces, events?: EventLog) {
    this.#node = node;
    this.#registry = registry;
    this.#recent = recent;
    this.#events = events;
  }

  async handle(body: unknown, traceparent: string | undefined, signal?: AbortSignal, onProgress?: (progress: unknown) => void): Promise<InvokeResult> {
    const span = { id: spanIdOf(newMessageId()), caller: parseTraceparent(traceparent), startedAt: Date.now(), t0: performance.now() };
    return isMetaForm(body) ? this.#meta(body, span, signal, onProgress) : this.#native(body, span, signal, onProgress);
  }

  async #meta(body: unknown, span: Span, signal?: AbortSignal, onProgress?: (progress: unknown) => void): Promise<InvokeResult> {
    let form;
    try {
      form = parseMetaForm(body);
      checkPayload(form.payload);
      form.payload = payloadFromJson(form.payload) as Payload;
    } catch (error) {
      return { status: 400, body: metaErrorReply(body, HermesError.from(error, ErrorCode.INVALID_REQUEST)) };
    }
    const { meta, payload } = form;
    const headers = { traceparent: this.#traceparent(meta.trace_id, span), sender_id: meta.sender_id };
    let target = meta.receiver_id;
    try {
      const route = routeOfMeta(meta, payload, (t) => this.#registry.resolveTarget(t).length > 0);
      target = route.target_agent ?? `capability:${route.capability}`;
      const ttl = Math.round(meta.ttl * 1000);
      if (meta.msg_type === HttpMsgType.EVENT) {
        const delivered = this.#node.emit(route, payload, { trace_id: meta.trace_id, ttl, headers });
        this.#finish(span, meta.trace_id, target, "event");
        return { status: 200, body: metaReply(meta, { accepted: true, delivered_to: delivered }) };
      }
      const answer = await this.#node.request(route, payload, {
        trace_id: meta.trace_id, ttl, timeoutMs: ttl, headers, signal,
        onProgress: (p) => onProgress?.(metaReply(meta, payloadToJson(p) as Payload, HttpMsgType.TASK_PROGRESS)),
      });
      this.#finish(span, meta.trace_id, target, "request");
      return { status: 200, body: metaReply(meta, payloadToJson(answer.payload) as Payload) };
    } catch (error) {
      const coded = HermesError.from(error);
      this.#finish(span, meta.trace_id, target, "request", coded.code);
      return { status: 200, body: metaReply(meta, coded.toPayload()) };
    }
  }

  async #native(body: unknown, span: Span, signal?: AbortSignal, onProgress?: (progress: unknown) => void): Promise<InvokeResult> {
    let env: Envelope;
    try {
      env = { ...parseEnvelope(body) };
      checkPayload(env.payload);
      env.payload = payloadFromJson(env.payload) as Payload;
    } catch (error) {
      return { status: 400, body: HermesError.from(error, ErrorCode.INVALID_REQUEST).toPayload() };
    }
    const target = env.target_agent ?? (env.topic ? `topic:${env.topic}` : `capability:${env.capability}`);
    delete env.seq;
    env.headers = { ...env.headers, traceparent: this.#traceparent(env.trace_id, span, env.headers?.traceparent) };
    if (env.message_type === MessageType.EVENT) {
      try {
        const delivered = this.#node.dispatch(env);
        this.#finish(span, env.trace_id, target, "event");
        return { status: 200, body: { accepted: true, message_id: env.message_id, delivered_to: delivered } };
      } catch (error) {
        const coded = HermesError.from(error);
        this.#finish(span, env.trace_id, target, "event", coded.code);
        return { status: 200, body: createErrorReply(env, this.#node.address, coded) };
      }
    }
    if (env.message_type !== MessageType.REQUEST) {
      const error = new HermesError(ErrorCode.INVALID_REQUEST, `a ${env.message_type} cannot be invoked`, { reason: `message_type ${env.message_type}`, expected: ["request", "event"] });
      return { status: 400, body: error.toPayload() };
    }
    // The answer comes back to the gateway; the caller sees it addressed to whom it asked for.
    const replyTo = env.reply_to!;
    env.reply_to = this.#node.address;
    let answer: Envelope;
    try {
      answer = await this.#node.requestEnvelope(env, { timeoutMs: env.ttl, signal, onProgress: (_p, progress) => onProgress?.(payloadToJson({ ...progress, target_agent: replyTo })) });
      this.#finish(span, env.trace_id, target, "request", answer.message_type === MessageType.ERROR ? Number(answer.payload.error_code) : undefined);
    } catch (error) {
      const coded = HermesError.from(error);
      answer = createErrorReply(env, this.#node.address, coded);
      this.#finish(span, env.trace_id, target, "request", coded.code);
    }
    const { seq: _seq, ...clean } = answer;
    return { status: 200, body: payloadToJson({ ...clean, target_agent: replyTo }) };
  }

  /** The traceparent the gateway's request carries: the caller's W3C trace when it sent one, the gateway's span as parent. */
  #traceparent(traceId: string, span: Span, inEnvelope?: string): string {
    const caller = span.caller ?? parseTraceparent(inEnvelope);
    span.caller = caller;
    return `00-${caller?.traceId ?? traceHexOf(traceId)}-${span.id}-01`;
  }

  #finish(span: Span, traceId: string, target: string, type: string, errorCode?: number): void {
    const duration = performance.now() - span.t0;
    this.#recent.add({
      trace_id: traceId, at: span.startedAt, route: type, target, duration_ms: Math.round(duration * 1000) / 1000,
      status: errorCode === undefined ? "ok" : "error", ...(errorCode !== undefined && { error_code: errorCode }),
    });
    // A binary record beside the log's JSON lines, as the actors' (src/observability/span-log.ts).
    this.#events?.handledSpan({
      type, label: `${type} → ${target}`, trace_id: traceId, span_id: span.id, parent_span_id: span.caller?.parentSpanId,
      started_at: span.startedAt, duration_ms: duration,
      // An actor's error payload is not checked: a code that is no number reads back as null.
      error_code: errorCode,
    });
  }
}

interface Span {
  id: string;
  caller: { traceId: string; parentSpanId: string } | undefined;
  startedAt: number;
  t0: number;
}
