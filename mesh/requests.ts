/**
 * The requests a member serves: each one's handler context and its one answer (ServedRequest),
 * the table of those being handled (ServingRequests), and a request/response channel over one
 * connection for the control plane and tests (RequestChannel). What a member has sent and waits
 * for is mesh/pending-requests.ts.
 */
import { type Envelope, type Payload, MessageType, createErrorReply, createReply, isPlainMap, createCancel, createRequest, type EnvelopeOptions, type Route, arrivedExpired, ttlDeadline } from "./envelope.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import { MAX_TIMER_MS, PendingRequests } from "./pending-requests.ts";
import type { MeshLink } from "./transport.ts";

/**
 * One request being handled: the handler's context, and exactly one answer back (response, error,
 * timeout or cancel, whichever comes first). The AbortController and the deadline timer cost more
 * than the rest of a round trip: the one is made when a handler reads `signal`, the other when it goes async.
 */
export class ServedRequest implements RequestContext {
  /** True once an answer (of any kind) has gone. */
  get done(): boolean {
    return this.#done;
  }

  /** The answer that went (response or error), once done. */
  get answer(): Envelope | undefined {
    return this.#answerEnvelope;
  }

  #owner: ServingRequests;
  #controller: AbortController | undefined;
  #abortReason: HermesError | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #done = false;
  #answerEnvelope: Envelope | undefined;

  /** `request` came on `via` as `seq`: where its answer goes. */
  constructor(readonly request: Envelope, readonly deadline: number, owner: ServingRequests, readonly via: MeshLink, readonly seq: number) {
    this.#owner = owner;
  }

  /** Aborted when the sender cancels, the ttl runs out or the connection closes. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#abortReason) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  progress(payload: Payload): void {
    if (!this.#done) this.#owner.progressed(this, payload);
  }

  /** Arms the ttl deadline: only needed once the handler has gone async. */
  startDeadline(): void {
    if (this.#done) return;
    const ttl = this.request.ttl;
    this.#timer = setTimeout(() => {
      if (this.deadline > Date.now()) return this.startDeadline(); // a ttl past setTimeout's longest delay
      this.abort(new HermesError(ErrorCode.TASK_TIMEOUT, `handler did not finish within the ttl of ${ttl} ms`, { timeout_ms: ttl }));
    }, Math.min(MAX_TIMER_MS, Math.max(0, this.deadline - Date.now())));
  }

  respond(payload: Payload): void {
    if (!isPlainMap(payload)) {
      this.fail(new HermesError(ErrorCode.INTERNAL, "handler returned a payload that is not a map"));
      return;
    }
    this.#finish(createReply(MessageType.RESPONSE, this.request, this.#owner.node, payload));
  }

  fail(error: unknown): void {
    this.#finish(createErrorReply(this.request, this.#owner.node, HermesError.from(error)));
  }

  /**
   * Runs the handler and answers with what it returns or throws (a HermesError keeps its code,
   * anything else is 7). The deadline timer is armed only when the handler goes async. The one
   * place a request handler is invoked, for the control plane and for actors alike.
   */
  run(handler: () => Payload | Promise<Payload>, hooks?: RunHooks): void | Promise<void> {
    let result: Payload | Promise<Payload>;
    try {
      result = handler();
    } catch (error) {
      this.#thrown(error, hooks);
      return;
    }
    // A sync handler answers in this same call: no promise, no microtask on the hot path.
    if (!(result instanceof Promise)) return this.#returned(result, hooks);
    this.startDeadline();
    return result.then((payload) => this.#returned(payload, hooks), (error) => this.#thrown(error, hooks));
  }

  #returned(payload: Payload, hooks: RunHooks | undefined): void {
    if (hooks?.beforeAnswer && !this.#done && isPlainMap(payload)) {
      try {
        hooks.beforeAnswer(payload);
      } catch (error) {
        this.#thrown(error, hooks);
        return;
      }
    }
    this.respond(payload);
  }

  #thrown(error: unknown, hooks: RunHooks | undefined): void {
    hooks?.onThrow?.(error, this.request);
    this.fail(error);
  }

  /** Stops the handler (signal) and answers with `reason` now; a late result is dropped. */
  abort(reason: HermesError): void {
    if (this.#done) return;
    this.#abortReason = reason;
    // A cancelled request still gets an answer, so the sender's bookkeeping always closes.
    this.#finish(createErrorReply(this.request, this.#owner.node, reason));
    this.#controller?.abort(reason);
  }

  #finish(reply: Envelope): void {
    if (this.#done) return;
    this.#done = true;
    this.#answerEnvelope = reply;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#owner.answered(this, reply);
  }
}

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

/** What ServedRequest.run calls around the handler: before its answer goes (a durable commit), and when it threw. */
export interface RunHooks {
  beforeAnswer?(payload: Payload): void;
  onThrow?(error: unknown, request: Envelope): void;
}

/**
 * A new request envelope and how long its sender waits: the timeout defaults to the ttl (60 s),
 * and the ttl to the timeout, so the handler gives up when the sender does.
 */
export function newRequest(node: string, route: Route, payload: Payload, options: RequestOptions): { request: Envelope; timeoutMs: number } {
  const timeoutMs = options.timeoutMs ?? options.ttl ?? 60_000;
  const request = createRequest(node, route, payload, options);
  request.ttl = options.ttl ?? timeoutMs;
  return { request, timeoutMs };
}

/** Where the requests a member serves are answered: one per member, not a closure per request. */
export interface AnswerSink {
  /** The one answer to `request` (served, or refused at once with its ttl spent), which came on `via` as `seq`. */
  answered(reply: Envelope, request: Envelope, via: MeshLink, seq: number): void;
  /** A progress payload of `served`. */
  progressed(served: ServedRequest, payload: Payload): void;
}

/**
 * The requests a member is handling, by message_id: each gets its ServedRequest (deadline from
 * its ttl, exactly one answer), a cancel from the sender aborts it, and a closed member aborts
 * them all. A request that arrives with its ttl spent is answered with code 9 at once; one
 * for a member that serves none, with code 8. Used by RequestChannel and MeshNode alike.
 */
export class ServingRequests {
  /** The address answers come from. */
  readonly node: string;
  readonly #serving = new Map<string, ServedRequest>();
  readonly #sink: AnswerSink;

  constructor(node: string, sink: AnswerSink) {
    this.node = node;
    this.#sink = sink;
  }

  get size(): number {
    return this.#serving.size;
  }

  /**
   * Starts serving `request`, which came on `via` as `seq`: the sink gets its one answer and its
   * progress payloads. Returns undefined when it was answered at once (ttl spent).
   */
  start(request: Envelope, receivedAt: number, via: MeshLink, seq: number): ServedRequest | undefined {
    if (arrivedExpired(request)) {
      this.#sink.answered(createErrorReply(request, this.node, new HermesError(ErrorCode.TTL_EXPIRED, "ttl ran out before handling", { ttl: request.ttl })), request, via, seq);
      return undefined;
    }
    const served = new ServedRequest(request, ttlDeadline(request, receivedAt), this, via, seq);
    this.#serving.set(request.message_id, served);
    return served;
  }

  /** `served`'s one answer (ServedRequest calls it). */
  answered(served: ServedRequest, reply: Envelope): void {
    this.#serving.delete(served.request.message_id);
    this.#sink.answered(reply, served.request, served.via, served.seq);
  }

  /** A progress payload of `served` (ServedRequest calls it). */
  progressed(served: ServedRequest, payload: Payload): void {
    this.#sink.progressed(served, payload);
  }

  /** Answers code 8: this member serves no requests. */
  refuse(served: ServedRequest): void {
    served.fail(new HermesError(ErrorCode.UNROUTABLE, `${this.node} serves no requests`, {
      target: served.request.target_agent ?? served.request.capability ?? served.request.topic ?? this.node,
      known: [],
    }));
  }

  /** The sender's cancel envelope: the handler's signal aborts and code 3 answers it. */
  cancel(env: Envelope, reason = "cancelled by sender"): void {
    this.#serving.get(env.correlation_id!)?.abort(new HermesError(ErrorCode.TASK_TIMEOUT, String(env.payload.reason ?? reason)));
  }

  abortAll(error: HermesError): void {
    for (const served of [...this.#serving.values()]) served.abort(error);
  }
}

/**
 * Request/response, progress and cancel over one connection, in both directions: either side
 * may send requests and serve them. Answers travel back on the connection the request came on.
 *
 * @example
 * const channel = new RequestChannel(connection, "client");
 * const reply = await channel.request({ target_agent: "echo" }, { text: "hi" }, { timeoutMs: 1000 });
 */
export class RequestChannel<L extends MeshLink = MeshLink> {
  readonly connection: L;
  readonly node: string;
  /** Serves incoming requests; without one, requests are answered with code 8. */
  handler: RequestHandler | undefined;
  /** Incoming events. */
  onEvent: (event: Envelope) => void = () => {};
  #pending = new PendingRequests((request, error) => {
    if (this.connection.isOpen) this.connection.send(createCancel(request, error.message));
  });
  #serving: ServingRequests;

  constructor(connection: L, node: string, handler?: RequestHandler) {
    this.connection = connection;
    this.node = node;
    this.handler = handler;
    this.#serving = new ServingRequests(node, {
      // Handled once its answer is on the wire: a peer that stops reading answers gets no credit (backpressure end to end).
      answered: (reply, _request, _via, seq) => {
        if (this.connection.isOpen) this.connection.send(reply, seq);
      },
      progressed: (served, payload) => {
        if (this.connection.isOpen) this.connection.send(createReply(MessageType.PROGRESS, served.request, this.node, payload));
      },
    });
    connection.onEnvelope = (env, seq) => this.#dispatch(env, seq);
    connection.closed.then(() => this.#failAll());
  }

  /** Sends a request and resolves with the response envelope; rejects with the coded error. */
  request(route: Route, payload: Payload, options: RequestOptions = {}): Promise<Envelope> {
    const { request, timeoutMs } = newRequest(this.node, route, payload, options);
    const answer = this.#pending.wait(request, { timeoutMs, signal: options.signal, onProgress: options.onProgress });
    if (options.signal?.aborted) return answer; // given up already (code 3): nothing goes out
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

  #dispatch(env: Envelope, seq: number): void {
    switch (env.message_type) {
      case MessageType.REQUEST:
        this.#serve(env, seq);
        return;
      case MessageType.CANCEL:
        this.#serving.cancel(env, "cancelled");
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
    const served = this.#serving.start(request, Date.now(), this.connection, seq);
    if (!served) return;
    const handler = this.handler;
    if (handler) void served.run(() => handler(request, served));
    else this.#serving.refuse(served);
  }

  #failAll(): void {
    this.#pending.failAll(new HermesError(ErrorCode.UNAVAILABLE, "connection closed before the answer arrived", { retry_after_ms: 100 }));
    this.#serving.abortAll(new HermesError(ErrorCode.UNAVAILABLE, "connection closed"));
  }
}
