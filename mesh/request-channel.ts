import { createCancel, createErrorReply, createReply, createRequest, type EnvelopeOptions, type Route } from "../src/protocol/envelope-factory.ts";
import type { Envelope, Payload } from "../src/protocol/envelope.ts";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";
import { MessageType } from "../src/protocol/message-types.ts";
import { arrivedExpired, ttlDeadline } from "../src/protocol/ttl.ts";
import type { Connection } from "./connection.ts";
import { PendingRequests } from "./pending-requests.ts";
import { ServedRequest } from "./served-request.ts";

/** What a request handler gets besides the envelope. */
export interface RequestContext {
  /** Aborted when the sender cancels or the request's ttl runs out. */
  signal: AbortSignal;
  /** Local time (ms since epoch) by which the answer must be queued. */
  deadline: number;
  /** Sends a progress message to the requester. */
  progress(payload: Payload): void;
}

/** Answers a request with a payload, or throws (HermesError keeps its code; anything else is code 7). */
export type RequestHandler = (request: Envelope, context: RequestContext) => Payload | Promise<Payload>;

/** Options of one outgoing request. */
export interface RequestOptions extends EnvelopeOptions {
  /** Give up after this long (default: the ttl, 60 s). The peer is sent a cancel. */
  timeoutMs?: number;
  /** Aborting cancels the request (a cancel goes to the peer) and rejects with code 3. */
  signal?: AbortSignal;
  /** Progress messages as they arrive. */
  onProgress?: (payload: Payload, envelope: Envelope) => void;
}


/**
 * Request/response, progress and cancel over one connection, in both directions: either side
 * may send requests and serve them. Answers travel back on the connection the request came on.
 *
 * @example
 * const channel = new RequestChannel(connection, "client");
 * const reply = await channel.request({ target_agent: "echo" }, { text: "hi" }, { timeoutMs: 1000 });
 */
export class RequestChannel {
  readonly connection: Connection;
  readonly node: string;
  /** Serves incoming requests; without one, requests are answered with code 8. */
  handler: RequestHandler | undefined;
  /** Incoming events. */
  onEvent: (event: Envelope) => void = () => {};
  #pending = new PendingRequests((request, error) => {
    if (this.connection.isOpen) this.connection.send(createCancel(request, error.message));
  });
  #serving = new Map<string, ServedRequest>();

  constructor(connection: Connection, node: string, handler?: RequestHandler) {
    this.connection = connection;
    this.node = node;
    this.handler = handler;
    connection.onEnvelope = (env, seq) => this.#dispatch(env, seq);
    connection.closed.then(() => this.#failAll());
  }

  /** Sends a request and resolves with the response envelope; rejects with the coded error. */
  request(route: Route, payload: Payload, options: RequestOptions = {}): Promise<Envelope> {
    const timeoutMs = options.timeoutMs ?? options.ttl ?? 60_000;
    const request = createRequest(this.node, route, payload, options);
    request.ttl = options.ttl ?? timeoutMs;
    const answer = this.#pending.wait(request, { timeoutMs, signal: options.signal, onProgress: options.onProgress });
    try {
      this.connection.send(request);
    } catch (error) {
      this.#pending.fail(request.message_id, HermesError.from(error, ErrorCode.UNAVAILABLE));
    }
    return answer;
  }

  /** Sends an event (no answer expected). */
  emit(event: Envelope): void {
    this.connection.send(event);
  }

  /** Requests sent and not yet answered. */
  get pendingRequests(): number {
    return this.#pending.size;
  }

  #dispatch(env: Envelope, seq: number): void {
    switch (env.message_type) {
      case MessageType.REQUEST:
        this.#serve(env, seq);
        return;
      case MessageType.CANCEL:
        this.#serving.get(env.correlation_id!)?.abort(new HermesError(ErrorCode.TASK_TIMEOUT, String(env.payload.reason ?? "cancelled")));
        break;
      case MessageType.EVENT:
        this.onEvent(env);
        break;
      default:
        this.#pending.handle(env);
    }
    this.connection.settle(seq);
  }

  #serve(request: Envelope, seq: number): void {
    const receivedAt = Date.now();
    // The request counts as handled once its answer is on the wire, so a peer that stops
    // reading answers stops getting credit for new requests: backpressure end to end.
    const answer = (reply: Envelope) => {
      if (this.connection.isOpen) this.connection.send(reply, seq);
    };
    if (arrivedExpired(request)) {
      answer(createErrorReply(request, this.node, new HermesError(ErrorCode.TTL_EXPIRED, "ttl ran out before handling", { ttl: request.ttl })));
      return;
    }
    const handler = this.handler;
    if (!handler) {
      answer(createErrorReply(request, this.node, new HermesError(ErrorCode.UNROUTABLE, `${this.node} serves no requests`, {
        target: request.target_agent ?? request.capability ?? request.topic,
        known: [],
      })));
      return;
    }
    const served = new ServedRequest(request, ttlDeadline(request, receivedAt), (reply) => {
      this.#serving.delete(request.message_id);
      answer(reply);
    }, (payload) => {
      if (this.connection.isOpen) this.connection.send(createReply(MessageType.PROGRESS, request, this.node, payload));
    }, this.node);
    this.#serving.set(request.message_id, served);
    try {
      const result = handler(request, served);
      if (result instanceof Promise) {
        served.startDeadline();
        result.then((payload) => served.respond(payload), (error) => served.fail(error));
      } else {
        served.respond(result);
      }
    } catch (error) {
      served.fail(error);
    }
  }

  #failAll(): void {
    this.#pending.failAll(new HermesError(ErrorCode.UNAVAILABLE, "connection closed before the answer arrived", { retry_after_ms: 100 }));
    for (const served of this.#serving.values()) served.abort(new HermesError(ErrorCode.UNAVAILABLE, "connection closed"));
  }
}
