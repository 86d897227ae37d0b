import type { MeshNode } from "../../mesh/mesh-node.ts";
import type { RequestOptions, ServedRequest } from "../../mesh/requests.ts";
import { type EnvelopeOptions, type Route, type Envelope, type Payload, createEvent } from "../../mesh/envelope.ts";
import { childTraceparent } from "../observability/trace-context.ts";
import type { ActorStore } from "./actor-store.ts";
import type { Logger } from "../../mesh/logger.ts";

/** Where a message goes: an actor name / address / stable id, or a full route. */
export type Destination = string | Route;

/** What an actor can do at any time (also in `init`). */
export interface InitContext {
  /** Actor name from the mesh file. */
  readonly name: string;
  /** This instance's address ("name", or "name#i" in a pool). */
  readonly address: string;
  readonly instance: number;
  readonly log: Logger;
  /** The actor's key-value state (durable actors: committed with each handled message). */
  readonly store: ActorStore;
  /** Writes an event line (e.g. a tool call) to this actor's JSON Lines log, with the trace ids in a handler. */
  record(event: Record<string, unknown> & { event: string }): void;
  /** Sends a request and resolves with the response payload; rejects with a HermesError. */
  request(to: Destination, payload: Payload, options?: RequestOptions): Promise<Payload>;
  /**
   * Sends an event to one destination (no answer). The promise resolves at once while the link
   * has room, else once the peer has taken enough: await it in a loop that sends many.
   * (A durable actor's sends wait for the handler's commit instead; theirs resolves at once.)
   */
  send(to: Destination, payload: Payload, options?: EnvelopeOptions): Promise<void>;
  /** Publishes an event to every subscriber of `topic`; returns how many actors it went to. */
  publish(topic: string, payload: Payload, options?: EnvelopeOptions): number;
  /** Resolves once every link has room again (at once while they do): pair with `publish` in a loop. */
  writable(): Promise<void>;
}

/** What a handler gets besides the envelope. Messages it sends keep the envelope's trace_id and context_id. */
export interface ActorContext<State = unknown> extends InitContext {
  /** The actor's state, as `init` returned it. */
  state: State;
  /** The message being handled. */
  readonly envelope: Envelope;
  /** Aborted when the sender cancels or the ttl runs out. */
  readonly signal: AbortSignal;
  /** Local time (ms since epoch) by which the answer must be sent. */
  readonly deadline: number;
  /** Sends a progress message to the requester (requests only). */
  progress(payload: Payload): void;
  /** Answers now; whatever the handler returns later is ignored (requests only). */
  reply(payload: Payload): void;
}

export function toRoute(to: Destination): Route {
  return typeof to === "string" ? { target_agent: to } : to;
}

interface Identity {
  name: string;
  address: string;
  instance: number;
  log: Logger;
  store: ActorStore;
  /** The actor's event log writer (a no-op when event logs are off). */
  record: (event: Record<string, unknown> & { event: string }) => void;
}

/** In a durable actor, the messages a handler call sends wait here for its commit. */
export type Outbox = Array<{ destination: string; envelope: Envelope }>;

/** A durable send's answer: its envelope waits for the commit, so there is no link to wait on. */
const COMMITTED_LATER: Promise<void> = Promise.resolve();

/** The context outside any handler. */
export function initContext(node: MeshNode, identity: Identity): InitContext {
  return {
    ...identity,
    request: async (to, payload, options) => (await node.request(toRoute(to), payload, options)).payload,
    send: (to, payload, options) => node.send(toRoute(to), payload, options),
    publish: (topic, payload, options) => node.publish(topic, payload, options),
    writable: () => node.writable(),
  };
}

/**
 * The context of one handler call. Outgoing messages inherit the trace and context ids (never
 * rewritten), and a request's default deadline is what is left of the current one.
 *
 * An instance of a class, made per message: its data are own properties and its functions live
 * on the prototype. An object literal with a closure per function cost an actor about 170 ns per
 * message (its allocation, and the collector's work after it); this costs about 20. Each
 * function is a getter that hands out an arrow calling the method, so `const { send } = ctx`
 * works as it did; a spread (`{ ...ctx }`) copies the data only.
 *
 * @example
 * const ctx = handlerContext(node, identity, state, envelope, served, served.deadline);
 * await handler(envelope, ctx);
 */
export function handlerContext<State>(
  node: MeshNode,
  identity: Identity,
  state: State,
  envelope: Envelope,
  served: ServedRequest | undefined,
  deadline: number,
  durable?: { store: ActorStore; outbox: Outbox },
): ActorContext<State> {
  return new HandlerCall(node, identity, state, envelope, served, deadline, durable);
}

class HandlerCall<State> implements ActorContext<State> {
  readonly name: string;
  readonly address: string;
  readonly instance: number;
  readonly store: ActorStore;
  state: State;
  readonly envelope: Envelope;
  readonly deadline: number;
  readonly #node: MeshNode;
  readonly #identity: Identity;
  readonly #served: ServedRequest | undefined;
  readonly #outbox: Outbox | undefined;
  /** This handler's span, as a traceparent: a hash of the message id, computed only when the handler sends something. */
  #traceparent: string | undefined;
  /** Bound on first use: most calls never log, and a logger per call showed in profiles. */
  #log: Logger | undefined;
  #inherited: EnvelopeOptions | undefined;

  constructor(node: MeshNode, identity: Identity, state: State, envelope: Envelope, served: ServedRequest | undefined, deadline: number, durable: { store: ActorStore; outbox: Outbox } | undefined) {
    this.name = identity.name;
    this.address = identity.address;
    this.instance = identity.instance;
    this.store = durable ? durable.store : identity.store;
    this.state = state;
    this.envelope = envelope;
    this.deadline = deadline;
    this.#node = node;
    this.#identity = identity;
    this.#served = served;
    this.#outbox = durable?.outbox;
    this.#traceparent = undefined;
    this.#log = undefined;
    this.#inherited = undefined;
  }

  get log(): Logger {
    return (this.#log ??= this.#identity.log.with({ trace_id: this.envelope.trace_id, message_id: this.envelope.message_id }));
  }

  get signal(): AbortSignal {
    // Nothing cancels an event: its signal never aborts.
    return this.#served ? this.#served.signal : new AbortController().signal;
  }

  get record(): ActorContext["record"] {
    return (event) => this.#identity.record({ trace_id: this.envelope.trace_id, message_id: this.envelope.message_id, ...event });
  }

  get request(): ActorContext["request"] {
    return async (to, payload, options) => {
      const inherited = this.#inherit(options);
      const opts = inherited.timeoutMs === undefined && inherited.ttl === undefined ? { ...inherited, timeoutMs: Math.max(1, this.deadline - Date.now()) } : inherited;
      return (await this.#node.request(toRoute(to), payload, opts)).payload;
    };
  }

  get send(): ActorContext["send"] {
    return (to, payload, options) => {
      if (!this.#outbox) return this.#node.send(toRoute(to), payload, this.#inherit(options));
      stage(this.#node, this.address, this.#outbox, toRoute(to), payload, this.#inherit(options), true);
      return COMMITTED_LATER;
    };
  }

  get publish(): ActorContext["publish"] {
    return (topic, payload, options) =>
      this.#outbox ? stage(this.#node, this.address, this.#outbox, { topic }, payload, this.#inherit(options), false) : this.#node.publish(topic, payload, this.#inherit(options));
  }

  get writable(): ActorContext["writable"] {
    return () => this.#node.writable();
  }

  get progress(): ActorContext["progress"] {
    return (payload) => this.#served?.progress(payload);
  }

  get reply(): ActorContext["reply"] {
    return (payload) => this.#served?.respond(payload);
  }

  /**
   * The options of a message sent from this call: the trace continues (same trace_id and
   * context_id, a traceparent naming this span). Without options of its own, every message of
   * the call shares one frozen object (a handler that sends many paid two objects per message).
   */
  #inherit<T extends EnvelopeOptions & RequestOptions>(options: T | undefined): T {
    if (options === undefined) return (this.#inherited ??= deepFreeze(this.#inheritFrom(undefined))) as T;
    return this.#inheritFrom(options);
  }

  #inheritFrom<T extends EnvelopeOptions>(options: T | undefined): T {
    const envelope = this.envelope;
    return {
      trace_id: envelope.trace_id,
      ...(envelope.context_id !== undefined && { context_id: envelope.context_id }),
      ...options,
      headers: { ...options?.headers, traceparent: (this.#traceparent ??= childTraceparent(envelope)) },
    } as unknown as T;
  }
}

/**
 * A durable handler's send: the envelope is built now (its message_id fixed), one copy per
 * destination resolved now, and held until the call commits; after a crash the outbox row is
 * resent with the same id, so the destination deduplicates it.
 */
function stage(node: MeshNode, source: string, outbox: Outbox, route: Route, payload: Payload, options: EnvelopeOptions, strict: boolean): number {
  let destinations: string[];
  try {
    destinations = node.resolve(route);
  } catch (error) {
    if (strict) throw error;
    return 0; // publishing to a topic nobody subscribes to is not an error
  }
  const envelope = createEvent(source, route, payload, options);
  for (const destination of destinations) outbox.push({ destination, envelope: { ...envelope } });
  return destinations.length;
}

/** `options` and its headers frozen: shared by every message a handler call sends, so none may change it. */
function deepFreeze(options: EnvelopeOptions): EnvelopeOptions {
  if (options.headers) Object.freeze(options.headers);
  return Object.freeze(options);
}
