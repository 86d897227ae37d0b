import { type Envelope, type Payload, MessageType, createErrorReply, createReply, isPlainMap, createCancel, createRequest, type EnvelopeOptions, type Route, arrivedExpired, ttlDeadline } from "./envelope.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import type { MeshLink } from "./transport.ts";

/** Options of one outgoing request's wait. */
export interface WaitOptions {
  /** Give up after this long (ms). */
  timeoutMs: number;
  /** Aborting gives up at once (code 3). */
  signal?: AbortSignal;
  /** Progress messages as they arrive. */
  onProgress?: (payload: Payload, envelope: Envelope) => void;
}

interface Pending {
  request: Envelope;
  promise: Promise<Envelope>;
  resolve: (response: Envelope) => void;
  reject: (error: HermesError) => void;
  onProgress?: WaitOptions["onProgress"];
  /** The deadline slot it waits in (see DeadlineBuckets), and whether it has ended (answered, given up). */
  slot: DeadlineSlot | undefined;
  ended: boolean;
  timeoutMs: number;
  onAbort?: () => void;
  signal?: AbortSignal;
  /** Once sent (PendingRequests.sent): the link a cancel goes through, the destination and time of its outcome. */
  via?: unknown; to?: string; sentAt?: number;
  /** When its wait began (performance.now()): the time it was sent, when it went at once. */
  filedAt: number;
}

/** How a request sent turned out, told as it settles (undefined `error`: a response); a promise reaction per request cost 0.5 us. */
export type RequestOutcome = (to: string, error: HermesError | undefined, latencyMs: number) => void;

/** Code 3 for a request its caller's signal gave up on. */
const cancelled = (timeoutMs: number) => new HermesError(ErrorCode.TASK_TIMEOUT, "request cancelled", { timeout_ms: timeoutMs });
const timedOut = (timeoutMs: number) => new HermesError(ErrorCode.TASK_TIMEOUT, `no answer within ${timeoutMs} ms`, { timeout_ms: timeoutMs });

const MAX_TIMER_MS = 2 ** 31 - 1; // setTimeout's longest delay: a longer one fires at once

/** A second wait for a request already waited for (a client's retry): the same answer, or its own timeout or abort first, which end only this wait; the first's end both (and progress goes to it). */
function joined(answer: Promise<Envelope>, first: Pending, { timeoutMs, signal }: WaitOptions): Promise<Envelope> {
  if (!signal && timeoutMs >= first.timeoutMs) return answer;
  if (signal?.aborted) return Promise.reject(cancelled(timeoutMs));
  return new Promise((resolve, reject) => {
    const end = (settle: () => void) => () => (clearTimeout(timer), signal?.removeEventListener("abort", onAbort), settle());
    const onAbort = end(() => reject(cancelled(timeoutMs)));
    const timer = timeoutMs <= MAX_TIMER_MS ? setTimeout(end(() => reject(timedOut(timeoutMs))), timeoutMs) : undefined;
    signal?.addEventListener("abort", onAbort);
    answer.then((env) => end(() => resolve(env))(), (error: unknown) => end(() => reject(error))());
  });
}

/** Deadlines are kept to this grain: a request times out at most this much after its deadline. */
const DEADLINE_GRAIN_MS = 10;

/** One slot of DeadlineBuckets: the requests filed under it, and how many of them still wait. */
interface DeadlineSlot {
  at: number;
  filed: Pending[];
  live: number;
}

/**
 * The deadlines of waiting requests, in slots of 10 ms, behind one timer set for the earliest
 * slot that holds somebody: each request is only pushed onto its slot's list (a timer per
 * request cost more than the rest of a round trip's bookkeeping, and a set of ids per slot
 * 0.3 us a request in hashing). A request that ends is only counted out; its slot forgets its
 * list when nobody in it waits any more, and compacts it when most have ended, so a slot holds
 * at most about twice the requests still waiting in it. The timer is unref'd while nobody waits.
 */
class DeadlineBuckets {
  #slots = new Map<number, DeadlineSlot>();
  /** The slot the last request went into: the next requests are about to use it too. */
  #newest: DeadlineSlot | undefined;
  #waiting = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #expire: (pending: Pending) => void;

  constructor(expire: (pending: Pending) => void) {
    this.#expire = expire;
  }

  /** Files `pending` under the slot at or after now + timeoutMs; returns the slot. */
  add(pending: Pending, timeoutMs: number): DeadlineSlot {
    // The monotonic clock: a wall clock stepped back (NTP, a resumed VM) must not delay timeouts.
    const now = performance.now();
    const at = Math.ceil((now + timeoutMs) / DEADLINE_GRAIN_MS) * DEADLINE_GRAIN_MS;
    let slot = this.#newest;
    if (slot === undefined || slot.at !== at) {
      slot = this.#slots.get(at);
      if (!slot) this.#slots.set(at, (slot = { at, filed: [], live: 0 }));
      this.#newest = slot;
    }
    pending.filedAt = now;
    slot.filed.push(pending);
    slot.live++;
    if (this.#waiting++ === 0) this.#timer?.ref?.();
    if (at < this.#timerAt) this.#arm(at, now);
    return slot;
  }

  /** `pending`, filed under `slot`, no longer waits (the caller has marked it ended). */
  remove(slot: DeadlineSlot): void {
    if (--slot.live === 0) {
      if (slot === this.#newest) slot.filed.length = 0;
      else this.#slots.delete(slot.at);
    } else if (slot.filed.length >= 64 && slot.live * 4 < slot.filed.length) {
      slot.filed = slot.filed.filter((pending) => !pending.ended);
    }
    if (--this.#waiting === 0) this.#timer?.unref?.();
  }

  #arm(at: number, now: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(this.#fire, Math.min(MAX_TIMER_MS, Math.max(0, at - now))); // early past it: #fire re-arms
    if (this.#waiting === 0) this.#timer.unref?.();
  }

  #fire = (): void => {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    let failure: { error: unknown } | undefined;
    for (const [at, slot] of this.#slots) {
      if (at <= now) {
        this.#slots.delete(at);
        if (slot === this.#newest) this.#newest = undefined;
        // Each expiry ends its request, which counts it out of the slot (remove).
        for (const pending of slot.filed) {
          if (pending.ended) continue;
          // One expiry that throws must not leave the later deadlines without a timer.
          try {
            this.#expire(pending);
          } catch (error) {
            failure ??= { error };
          }
        }
      } else if (slot.live > 0) next = Math.min(next, at);
      else this.#slots.delete(at);
    }
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next, now);
    if (failure) throw failure.error;
  };
}

/**
 * Requests sent and waiting for their answer, keyed by message_id: an answer may come on any
 * connection (the request was redelivered on another), so the correlation id is what matches.
 */
export class PendingRequests<Via = unknown> {
  #pending = new Map<string, Pending>();
  /** The request whose wait began last (until it ends): what sent() is told of next. */
  #newest: Pending | undefined;
  #deadlines = new DeadlineBuckets((pending) => this.giveUp(pending.request.message_id, timedOut(pending.timeoutMs)));
  /** Called when a request is given up (deadline, abort) so the peer can be told to cancel: `via` is what sent() named. */
  #onGiveUp: (request: Envelope, error: HermesError, via: Via | undefined) => void;
  #onOutcome: RequestOutcome | undefined;

  constructor(onGiveUp: (request: Envelope, error: HermesError, via: Via | undefined) => void = () => {}, onOutcome?: RequestOutcome) {
    this.#onGiveUp = onGiveUp;
    this.#onOutcome = onOutcome;
  }

  /** The request `id` went to `to` through `via` (again when it moved off `from`): where a cancel goes, and whose outcome it is. */
  sent(id: string, to: string, via: Via, from?: Via): void {
    // Told right after its wait began, as a rule: the request filed last, without a lookup.
    const newest = this.#newest;
    const pending = newest !== undefined && newest.request.message_id === id ? newest : this.#pending.get(id);
    if (!pending || (from !== undefined && pending.via !== from)) return;
    pending.to = to;
    pending.via = via;
    // Sent as its wait began (one clock read less a request), or later: moved off a link.
    if (this.#onOutcome) pending.sentAt = pending === newest && from === undefined ? pending.filedAt : performance.now();
  }

  /** Requests waiting. */
  get size(): number { return this.#pending.size; }

  /** Starts waiting for the answer to `request`; resolves with the response envelope or rejects with the coded error. */
  wait(request: Envelope, options: WaitOptions): Promise<Envelope> {
    const id = request.message_id;
    // The same id again (a client retrying through the gateway) waits for the same answer.
    const waiting = this.#pending.get(id);
    if (waiting) return joined(waiting.promise, waiting, options);
    const { promise, resolve, reject } = Promise.withResolvers<Envelope>();
    const timeoutMs = options.timeoutMs;
    if (options.signal?.aborted) return (reject(cancelled(timeoutMs)), promise);
    const pending: Pending = { request, promise, resolve, reject, onProgress: options.onProgress, slot: undefined, ended: false, timeoutMs, filedAt: 0 };
    pending.slot = this.#deadlines.add(pending, timeoutMs);
    if (options.signal) {
      pending.signal = options.signal;
      pending.onAbort = () => this.giveUp(id, cancelled(timeoutMs));
      // No `once`: #take removes it whichever way the request ends (an options object per request cost 0.1 us).
      options.signal.addEventListener("abort", pending.onAbort);
    }
    this.#pending.set(id, pending);
    this.#newest = pending;
    return promise;
  }

  /** Applies a response, error or progress envelope; returns false when it answers nothing waiting here. */
  handle(env: Envelope): boolean {
    const id = env.correlation_id!;
    switch (env.message_type) {
      case MessageType.RESPONSE:
      case MessageType.ERROR: {
        const pending = this.#take(id);
        if (!pending) return false;
        const error = env.message_type === MessageType.ERROR ? HermesError.fromWire(env) : undefined;
        this.#told(pending, error);
        error ? pending.reject(error) : pending.resolve(env);
        return true;
      }
      case MessageType.PROGRESS: {
        const pending = this.#pending.get(id);
        pending?.onProgress?.(env.payload, env);
        return pending !== undefined;
      }
    }
    return false;
  }

  /** Rejects one waiting request now (and tells the peer through onGiveUp). */
  giveUp(id: string, error: HermesError): void { this.fail(id, error, true); }

  /** Rejects one waiting request without telling the peer (it never got it, or is gone), or telling it (`tellPeer`). */
  fail(id: string, error: HermesError, tellPeer = false): void {
    const pending = this.#take(id);
    if (!pending) return;
    try {
      if (tellPeer) this.#onGiveUp(pending.request, error, pending.via as Via | undefined);
    } catch {
      // Best effort (its link may be full or closed): the ttl ends the handling there anyway.
    }
    this.#told(pending, error);
    pending.reject(error);
  }

  /** The outcome of a request that was sent; a listener that throws does not stop its answer. */
  #told(pending: Pending, error: HermesError | undefined): void {
    if (!this.#onOutcome || pending.to === undefined) return;
    try {
      this.#onOutcome(pending.to, error, performance.now() - pending.sentAt!);
    } catch (thrown) {
      queueMicrotask(() => { throw thrown; });
    }
  }

  /** Rejects every waiting request. */
  failAll(error: HermesError): void {
    for (const id of [...this.#pending.keys()]) this.fail(id, error);
  }

  #take(id: string): Pending | undefined {
    const pending = this.#pending.get(id);
    if (!pending) return undefined;
    this.#pending.delete(id);
    pending.ended = true;
    if (pending === this.#newest) this.#newest = undefined;
    this.#deadlines.remove(pending.slot!);
    if (pending.onAbort) pending.signal!.removeEventListener("abort", pending.onAbort);
    return pending;
  }
}

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
