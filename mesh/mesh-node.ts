import { type Envelope, createCancel, createErrorReply, createEvent, createReply, type EnvelopeOptions, type Route, type Payload, MessageType, arrivedExpired } from "./envelope.ts";
import type { LinkListener, LinkSettings, MeshLink, MeshTransport } from "./transport.ts";
import { socketTransport } from "./socket-transport.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import { DedupeCache, type AnswerSummary, type DedupeStore } from "./dedupe-cache.ts";
import { DeadLetters, type DeadLetter, type DeadLetterLimits, PeerLink, ReplyPaths } from "./peer-link.ts";
import { PendingRequests } from "./pending-requests.ts";
import { newRequest, ServingRequests, type RequestOptions, type ServedRequest } from "./requests.ts";
import type { RegistryEntry } from "./registry.ts";
import { Router, type InstancePicker, type RouteTable } from "./routing.ts";
export type { DeadLetter, DeadLetterLimits } from "./peer-link.ts";

/** An event delivered to this node; call `done()` once handled (that is when it is acknowledged). */
export interface InboundEvent {
  envelope: Envelope;
  done(): void;
}

/** An event as the node hands it over: one object, `done` on its prototype and acting once (a closure, its scope and an object per event before). */
class ReceivedEvent implements InboundEvent {
  #finish: ((event: ReceivedEvent) => void) | undefined;
  constructor(readonly envelope: Envelope, readonly connection: MeshLink, readonly seq: number, finish: (event: ReceivedEvent) => void) {
    this.#finish = finish;
  }
  /** A getter, so that `const { done } = event` works too. */
  get done(): () => void {
    return () => {
      const finish = this.#finish;
      this.#finish = undefined;
      finish?.(this);
    };
  }
}

/** Settings of a mesh participant. */
export interface MeshNodeOptions {
  /** This node's address (its name in hello and in `source_agent`). */
  address: string;
  /** Listen here for peers (actors, subscribing clients); omit for a dial-only client. An endpoint of the transport: for sockets, a path. */
  socketPath?: string;
  /** How members are reached. Default: the socket transport (Unix sockets, TCP). */
  transport?: MeshTransport;
  /** Where names, capabilities and topics resolve (the registry snapshot). */
  routes: RouteTable & { byAddress(address: string): RegistryEntry | undefined };
  /** The scheduler's choice among candidate instances. */
  pick: InstancePicker;
  /** Requests for this node. Answer through the ServedRequest (respond / fail). */
  onRequest?: (request: ServedRequest) => void;
  /** Events for this node. */
  onEvent?: (event: InboundEvent) => void;
  /** Mesh token, sent when dialing and required from peers. */
  token?: string;
  /** Credit window offered to peers. */
  window?: number;
  /** Deliveries before dead-lettering. Default 10. */
  maxAttempts?: number;
  /** How much of what it gave up on the node keeps: 1,000 letters and 64 MiB of payloads by default. */
  deadLetters?: DeadLetterLimits;
  /** The dedupe memory (durable mode passes one backed by its store). */
  dedupe?: DedupeStore;
  /** How each request this node sent turned out, by destination: the scheduler's success rate and latency figures (a coded answer the caller caused, like 2 or 4, counts as a success of the instance). */
  onOutcome?: (address: string, ok: boolean, latencyMs: number) => void;
  /** Every request or event this node sends, once routed (for event logs). */
  onSent?: (env: Envelope, destinations: readonly string[]) => void;
  /** A destination acknowledged an envelope this node sent (a durable outbox deletes it then). */
  onDelivered?: (env: Envelope, destination: string) => void;
  /** Envelopes here wait for `address`, which this node cannot reach (a member tells its supervisor: control op `awaiting`). */
  onAwaiting?: (address: string) => void;
}

/** The answer of every wait that has nothing to wait for. */
const READY: Promise<void> = Promise.resolve();
/** The options of a call that gives none: one shared object, not a new one per message. */
const NO_OPTIONS: Readonly<RequestOptions> = Object.freeze({});

/** Resolves at once while every link has room (no promise made), else once each has taken enough. */
function roomIn(links: Iterable<PeerLink>): Promise<void> {
  let waits: Promise<void>[] | undefined;
  for (const link of links) if (!link.hasRoom) (waits ??= []).push(link.whenRoom());
  return waits ? Promise.all(waits).then(() => undefined) : READY;
}

/** Health that lets a non-durable instance's envelopes move to a sibling (MeshNode.#moveOff). */
const AWAY: ReadonlySet<string> = new Set(["down", "unhealthy"]);

/** Answers that say the instance itself failed (not the request): they count against it in scheduling. */
const FAILURE_CODES: ReadonlySet<number> = new Set([ErrorCode.UNKNOWN, ErrorCode.TASK_TIMEOUT, ErrorCode.RESOURCE_EXHAUSTED, ErrorCode.INTERNAL, ErrorCode.UNAVAILABLE]);

/**
 * One participant of the mesh (an actor instance or a program using connectMesh): listens for
 * peers, routes what it sends from its registry view (one hop, no broker), keeps everything
 * unacknowledged in per-destination links that redeliver after a crash, deduplicates what it
 * receives, and sends answers back to the requester whichever connection is open.
 */
export class MeshNode {
  readonly address: string;
  #options: MeshNodeOptions;
  #router: Router;
  #listener: LinkListener | undefined;
  #transport: MeshTransport;
  #links = new Map<string, PeerLink>();
  #pending: PendingRequests<PeerLink>;
  #serving: ServingRequests;
  #dedupe: DedupeStore;
  /** Redeliveries that arrived while the first delivery was still being handled: acked with it. */
  #duplicates = new Map<string, Array<{ connection: MeshLink; seq: number }>>();
  // Through the link, not its connection: a link ramping up after a break keeps its order.
  #replies = new ReplyPaths((to, reply) => {
    if (this.#links.get(to)?.connection || this.#options.routes.byAddress(to)) this.#link(to).send(reply);
  });
  #deadLetters: DeadLetters;
  /** Envelopes moved off an instance that went away, each to where it was sent first (#moveOff). */
  #movedFrom = new WeakMap<Envelope, string>();
  #closed = false;

  private constructor(options: MeshNodeOptions) {
    this.address = options.address;
    this.#options = options;
    this.#transport = options.transport ?? socketTransport;
    this.#router = new Router(options.routes, options.pick);
    this.#dedupe = options.dedupe ?? new DedupeCache();
    this.#deadLetters = new DeadLetters(options.deadLetters);
    this.#serving = new ServingRequests(options.address, {
      answered: (reply, request, via, seq) => this.#answered(request, reply, via, seq),
      progressed: (served, payload) => this.#progress(served.request, payload, served.via),
    });
    const onOutcome = options.onOutcome;
    this.#pending = new PendingRequests<PeerLink>(
      (request, error, via) => this.#cancelRemote(request, error, via),
      onOutcome && ((to, error, latencyMs) => onOutcome(to, error === undefined || !FAILURE_CODES.has(error.code), latencyMs)),
    );
  }

  /** Creates a node, listening first when it has a socket path. */
  static async start(options: MeshNodeOptions): Promise<MeshNode> {
    const node = new MeshNode(options);
    if (options.socketPath) {
      node.#listener = await node.#transport.listen(options.socketPath, {
        ...node.#connectionOptions(),
        ...(options.token !== undefined && { requireToken: options.token }),
        onLink: (link) => node.#adoptLink(link),
      });
    }
    return node;
  }

  /** Where this node listens for peers (the bound port included), when it listens. */
  get endpoint(): string | undefined {
    return this.#listener?.endpoint;
  }

  /** Requests waiting for an answer, envelopes queued for destinations, handlers running; dead letters kept now and ever. */
  get stats(): { pending: number; queued: number; inFlight: number; serving: number; deadLetters: number; deadLettersTotal: number } {
    let queued = 0;
    let inFlight = 0;
    for (const link of this.#links.values()) {
      queued += link.queued;
      inFlight += link.inFlight;
    }
    return { pending: this.#pending.size, queued, inFlight, serving: this.#serving.size, deadLetters: this.#deadLetters.size, deadLettersTotal: this.#deadLetters.total };
  }

  /** Envelopes given up on (attempts exhausted), newest last. */
  deadLetters(): readonly DeadLetter[] {
    return this.#deadLetters.list();
  }

  /** Sends a request along a route and resolves with the response envelope; rejects with the coded error (8 unroutable, 3 deadline, 10 attempts exhausted, or the handler's). */
  request(route: Route, payload: Payload, options: RequestOptions = NO_OPTIONS): Promise<Envelope> {
    const { request, timeoutMs } = newRequest(this.address, route, payload, options);
    return this.requestEnvelope(request, { timeoutMs, signal: options.signal, onProgress: options.onProgress });
  }

  /** Sends a request envelope built elsewhere (the gateway forwards what HTTP clients send, ids and trace intact) along its own route and waits for the answer here (`reply_to` must be this node's address). */
  requestEnvelope(request: Envelope, options: Pick<RequestOptions, "timeoutMs" | "signal" | "onProgress">): Promise<Envelope> {
    const timeoutMs = options.timeoutMs ?? request.ttl;
    const waiting = this.#pending.size;
    const answer = this.#pending.wait(request, { timeoutMs, signal: options.signal, onProgress: options.onProgress });
    // Nothing goes out for a wait given up already (code 3), or joined to the same request's wait
    // (a client's retry): that one is on its way, and another instance must not handle it too.
    if (this.#pending.size === waiting) return answer;
    try {
      const destinations = this.#router.destinations(request);
      let first: PeerLink | undefined;
      for (let i = 0; i < destinations.length; i++) {
        const copy = i === 0 ? request : { ...request };
        const link = this.#link(destinations[i]!.address);
        first ??= link;
        link.send(copy);
      }
      // Once every copy went (a send that throws fails it uncounted): the first destination carries a cancel, and its outcome counts.
      if (first) this.#pending.sent(request.message_id, destinations[0]!.address, first);
      this.#options.onSent?.(request, destinations.map((d) => d.address));
    } catch (error) {
      this.#pending.fail(request.message_id, HermesError.from(error, ErrorCode.UNAVAILABLE));
    }
    return answer;
  }

  /** Sends an event along a route (a target, a capability, or every subscriber of a topic). Returns how many destinations it went to. */
  emit(route: Route, payload: Payload, options: EnvelopeOptions = NO_OPTIONS): number {
    return this.#emit(route, payload, options).length;
  }

  /**
   * Sends an event like emit, and resolves at once while the destinations it went to have
   * room, else once they have taken enough: backpressure for a producer's loop, looking only
   * at the links this event used.
   *
   * @example
   * for (let i = 0; i < 1_000_000; i++) await node.send({ target_agent: "sink" }, { i });
   */
  send(route: Route, payload: Payload, options: EnvelopeOptions = NO_OPTIONS): Promise<void> {
    const links = this.#emit(route, payload, options);
    // One destination (a name, an address): no array of promises to gather.
    if (links.length === 1) return links[0]!.hasRoom ? READY : links[0]!.whenRoom();
    return roomIn(links);
  }

  #emit(route: Route, payload: Payload, options: EnvelopeOptions): PeerLink[] {
    const event = createEvent(this.address, route, payload, options);
    const destinations = this.#router.destinations(route);
    const links: PeerLink[] = [];
    for (let i = 0; i < destinations.length; i++) {
      const link = this.#link(destinations[i]!.address);
      link.send(i === 0 ? event : { ...event });
      links.push(link);
    }
    this.#options.onSent?.(event, destinations.map((d) => d.address));
    return links;
  }

  /** Sends an envelope built elsewhere (a durable outbox replaying after a restart) along its own route, its message_id kept so receivers deduplicate it. */
  dispatch(env: Envelope): number {
    const destinations = this.#router.destinations(env);
    for (const [i, destination] of destinations.entries()) this.#link(destination.address).send(i === 0 ? env : { ...env });
    return destinations.length;
  }

  /** The addresses a route resolves to now (throws code 8 like a send would). */
  resolve(route: Route): string[] {
    return this.#router.destinations(route).map((d) => d.address);
  }

  /** Sends an envelope to one instance address, whatever its own route fields say. */
  sendTo(address: string, env: Envelope): void {
    this.#link(address).send(env);
    this.#options.onSent?.(env, [address]);
  }

  /** Publishes an event on a topic to every subscriber; 0 when nobody subscribes (not an error). */
  publish(topic: string, payload: Payload, options: EnvelopeOptions = NO_OPTIONS): number {
    try {
      return this.emit({ topic }, payload, options);
    } catch (error) {
      if (error instanceof HermesError && error.code === ErrorCode.UNROUTABLE) return 0;
      throw error;
    }
  }

  /**
   * Resolves at once while every destination has room; else once each has taken enough. A
   * producer that awaits it between sends never piles up envelopes and never gets code 6:
   *
   * @example
   * for (let i = 0; i < 1_000_000; i++) {
   *   node.emit({ target_agent: "sink" }, { i });
   *   await node.writable();
   * }
   */
  writable(): Promise<void> {
    return roomIn(this.#links.values());
  }

  /** The registry says `address` is (back) up: links waiting for it try at once. */
  notifyUp(address: string): void {
    this.#links.get(address)?.notifyUp();
  }

  /** The registry says `address` is not healthy (crashed, restarting, hung): what waits for it may move to a sibling. */
  notifyAway(address: string): void {
    this.#moveOff(address);
  }

  /**
   * Moves what waits for `address` (what a crash left unacknowledged, and what was sent since) to
   * a healthy sibling that the envelope's own route also names (mesh/routing.ts, `alternative`):
   * only while the registry says `address` is not healthy, and only when that instance said its
   * dedupe memory does not outlive a restart (`durable: false`), since its restart would handle
   * the envelope again anyway. A durable one keeps what it is owed, and deduplicates it when it
   * is back. Each envelope moves once: when the sibling crashes with it too, it waits for that
   * one, so a message that kills whoever handles it takes down two instances at most.
   */
  #moveOff(address: string): void {
    const entry = this.#options.routes.byAddress(address);
    const link = this.#links.get(address);
    // Down or hung only: a "starting" instance is a live process that may still handle what it got.
    if (this.#closed || !entry || !link || !AWAY.has(entry.health) || entry.durable !== false) return;
    const destinations = new Map<Envelope, string>();
    const taken = link.takeBack((env) => {
      if (this.#movedFrom.has(env)) return false;
      const to = this.#router.alternative(env, address);
      // A sibling with no room would refuse it: it stays, owed to this instance.
      if (!to || this.#links.get(to.address)?.hasRoom === false) return false;
      destinations.set(env, to.address);
      return true;
    });
    for (const env of taken) {
      // Picked again as each goes: the scheduler now counts the ones moved before it, so a
      // crash's envelopes spread over the siblings instead of all going to the least loaded.
      const again = this.#router.alternative(env, address)?.address;
      const to = again !== undefined && this.#links.get(again)?.hasRoom !== false ? again : destinations.get(env)!;
      this.#movedFrom.set(env, address);
      const next = this.#link(to);
      try {
        next.send(env);
      } catch (error) {
        // The sibling's link refused it (full, over its frame limit): answered for, as a send that waited would be.
        this.#unsendable(env, to, HermesError.from(error));
        continue;
      }
      // A topic request's other copies keep their own destination: only the one sent here is rebound.
      if (env.message_type === MessageType.REQUEST) this.#pending.sent(env.message_id, to, next, link);
      this.#options.onSent?.(env, [to]);
    }
  }

  /** Envelopes this node has handed to `address` and not yet had acknowledged (the scheduler's local load view). */
  inFlightTo(address: string): number {
    const link = this.#links.get(address);
    return link ? link.queued + link.inFlight : 0;
  }

  /** `address` left the mesh (a client disconnected): drop its link and whatever still waits for it. */
  forget(address: string): void {
    const link = this.#links.get(address);
    if (!link) return;
    this.#links.delete(address);
    void link.close().then((left) => {
      for (const env of left) this.#deadLetter(env, address, new HermesError(ErrorCode.UNAVAILABLE, `${address} left the mesh`));
    });
  }

  /** Stops listening and closes every connection; unanswered requests fail with code 10. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#listener?.close();
    await Promise.all([...this.#links.values()].map((link) => link.close()));
    this.#pending.failAll(new HermesError(ErrorCode.UNAVAILABLE, `${this.address} closed`));
  }

  #connectionOptions(): LinkSettings {
    return {
      node: this.address,
      ...(this.#options.window !== undefined && { window: this.#options.window }),
      ...(this.#options.token !== undefined && { token: this.#options.token }),
    };
  }

  #link(address: string): PeerLink {
    let link = this.#links.get(address);
    if (!link) {
      link = new PeerLink({
        address,
        endpoint: () => this.#options.routes.byAddress(address)?.socket,
        transport: this.#transport,
        connection: this.#connectionOptions(),
        maxAttempts: this.#options.maxAttempts,
        onEnvelope: (env, seq, connection) => this.#receive(env, seq, connection),
        onDeadLetter: (env, error) => this.#deadLetter(env, address, error),
        onExpired: (env) => this.#expired(env),
        onUnsendable: (env, error) => this.#unsendable(env, address, error),
        onAcknowledged: (env: Envelope) => {
          this.#answerAcknowledged(env);
          // A durable outbox knows a moved envelope by the destination it was sent to first.
          if (this.#options.onDelivered) this.#options.onDelivered(env, this.#movedFrom.get(env) ?? address);
        },
        onBroken: () => this.#moveOff(address),
        onAway: () => this.#options.onAwaiting?.(address),
      });
      this.#links.set(address, link);
    }
    return link;
  }

  #adoptLink(connection: MeshLink): void {
    this.#replies.track(connection);
    connection.onEnvelope = (env, seq) => this.#receive(env, seq, connection);
    connection.onAcknowledged = this.#answerAcknowledged;
  }

  /** The requester acknowledged an answer: it will not ask again, so the dedupe memory keeps only the id (keeping every answer grew a busy actor's memory without bound). */
  #answerAcknowledged = (env: Envelope): void => {
    if (env.message_type === MessageType.RESPONSE || env.message_type === MessageType.ERROR) this.#dedupe.releaseAnswer(env.correlation_id!, env);
  };

  #receive(env: Envelope, seq: number, connection: MeshLink): void {
    switch (env.message_type) {
      case MessageType.RESPONSE:
      case MessageType.ERROR:
      case MessageType.PROGRESS:
        this.#pending.handle(env);
        connection.settle(seq);
        return;
      case MessageType.CANCEL:
        this.#serving.cancel(env);
        connection.settle(seq);
        return;
    }
    const id = env.message_id;
    const seen = this.#dedupe.lookup(id);
    if (seen) {
      // A redelivery: never handled twice. A request gets its stored answer again.
      if (seen.state === "handling") {
        const waiting = this.#duplicates.get(id);
        if (waiting) waiting.push({ connection, seq });
        else this.#duplicates.set(id, [{ connection, seq }]);
      } else if (seen.answer) {
        this.#sendAgain(seen.answer, connection, seq);
      } else if (seen.answerSummary && env.message_type === MessageType.REQUEST) {
        // Handled once already; only its body was given up to the memory budget.
        this.#sendAgain(createErrorReply(env, this.address, answerNotKept(seen.answerSummary)), connection, seq);
      } else {
        connection.settle(seq);
      }
      return;
    }
    const receivedAt = Date.now();
    if (env.message_type === MessageType.REQUEST) {
      const served = this.#serving.start(env, receivedAt, connection, seq);
      if (!served) return;
      this.#dedupe.begin(id, receivedAt);
      const onRequest = this.#options.onRequest;
      if (onRequest) onRequest(served);
      else this.#serving.refuse(served);
      return;
    }
    // An event: handled once, acknowledged when the handler says it is done.
    if (arrivedExpired(env)) {
      connection.settle(seq);
      return;
    }
    this.#dedupe.begin(id, receivedAt);
    const event = new ReceivedEvent(env, connection, seq, this.#eventHandled);
    if (this.#options.onEvent) this.#options.onEvent(event);
    else event.done();
  }

  /** An event's handler is done: remembered as handled, acknowledged, its waiting duplicates too. */
  #eventHandled = (event: ReceivedEvent): void => {
    const id = event.envelope.message_id;
    this.#dedupe.complete(id);
    event.connection.settle(event.seq);
    this.#settleDuplicates(id);
  };

  /** A request's one answer (its ttl spent on arrival, too) goes back, and is remembered for a redelivery. */
  #answered(request: Envelope, reply: Envelope, connection: MeshLink, seq: number): void {
    const id = request.message_id;
    let answer = reply;
    try {
      this.#replies.send(answer, connection, seq);
    } catch (error) {
      const refusal = HermesError.from(error);
      if (isBackpressure(refusal)) {
        // The way back is full (the requester does not acknowledge): the answer is kept for its
        // redelivery, and the request counts as handled so that it is never handled twice.
        connection.settle(seq);
      } else {
        // The answer itself cannot travel (too deep, too big): the requester learns why at once.
        answer = createErrorReply(request, this.address, unsendableAnswer(refusal));
        try {
          this.#replies.send(answer, connection, seq);
        } catch {
          connection.settle(seq);
        }
      }
    }
    this.#dedupe.complete(id, answer);
    this.#settleDuplicates(id);
  }

  /** A stored answer for a redelivery; when the way back is full the redelivery is acknowledged all the same. */
  #sendAgain(answer: Envelope, connection: MeshLink, seq: number): void {
    try {
      this.#replies.send(answer, connection, seq);
    } catch {
      connection.settle(seq);
    }
  }

  #settleDuplicates(id: string): void {
    const waiting = this.#duplicates.get(id);
    if (!waiting) return;
    this.#duplicates.delete(id);
    for (const { connection, seq } of waiting) connection.settle(seq);
  }

  #progress(request: Envelope, payload: Payload, connection: MeshLink): void {
    this.#replies.send(createReply(MessageType.PROGRESS, request, this.address, payload), connection);
  }

  #cancelRemote(request: Envelope, error: HermesError, via: PeerLink | undefined): void {
    if (via?.connection) via.send(createCancel(request, error.message));
  }

  #deadLetter(env: Envelope, destination: string, error: HermesError): void {
    this.#deadLetters.add(env, destination, error);
    // A refusal keeps its code 5; giving up after the attempts is code 10.
    const code = error.code === ErrorCode.AUTH_FAILED ? ErrorCode.AUTH_FAILED : ErrorCode.UNAVAILABLE;
    if (env.message_type === MessageType.REQUEST) this.#pending.fail(env.message_id, new HermesError(code, error.message, error.fields));
  }

  /** An envelope refused after it waited: a request fails at its sender, an answer becomes an error answer. */
  #unsendable(env: Envelope, destination: string, error: HermesError): void {
    switch (env.message_type) {
      case MessageType.REQUEST:
        this.#pending.fail(env.message_id, error);
        return;
      case MessageType.RESPONSE:
      case MessageType.ERROR: {
        const request = { message_id: env.correlation_id!, trace_id: env.trace_id, reply_to: env.target_agent!, source_agent: env.target_agent!, ttl: env.ttl };
        const answer = createErrorReply(request, this.address, unsendableAnswer(error));
        this.#dedupe.complete(env.correlation_id!, answer);
        this.#link(destination).send(answer);
        return;
      }
      default:
        this.#deadLetters.add(env, destination, error);
    }
  }

  #expired(env: Envelope): void {
    if (env.message_type === MessageType.REQUEST) {
      this.#pending.fail(env.message_id, new HermesError(ErrorCode.TTL_EXPIRED, "ttl ran out before the destination was reachable", { ttl: env.ttl }));
    }
  }
}

/** The error a requester gets in place of an answer that could not be sent. */
function unsendableAnswer(error: HermesError): HermesError {
  return new HermesError(error.code, `the answer could not be sent: ${error.message}`, error.fields);
}

/** Code 6 for a redelivered request whose answer was sent but not kept past the answer budget. */
function answerNotKept(summary: AnswerSummary): HermesError {
  return new HermesError(ErrorCode.RESOURCE_EXHAUSTED, `already handled; its answer (${summary.bytes} bytes) was not kept past the receiver's answer memory budget`, {
    resource: "answer_memory",
    used: summary.bytes,
    answer_message_id: summary.message_id,
    answer_type: summary.message_type,
  });
}

/** A refusal because the way to the peer is full, not because of the envelope itself. */
function isBackpressure(error: HermesError): boolean {
  return error.code === ErrorCode.RESOURCE_EXHAUSTED && (error.fields.resource === "send_backlog" || error.fields.resource === "send_bytes");
}
