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
 * An object made per message, its data own properties and its functions accessors on the
 * prototype, each made on first use and kept: an object literal with a closure per function
 * cost an actor about 170 ns per message (its allocation, and the collector's work after it);
 * this about 20. A handler may take members apart (`const { send } = ctx`), replace one
 * (`ctx.send = wrapped`), wrap the context in a Proxy or use it as a prototype; a spread
 * (`{ ...ctx }`) copies its data only.
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
  return new HandlerCall(node, identity, state, envelope, served, deadline, durable) as unknown as ActorContext<State>;
}

// What a context keeps for its functions, under symbols: properties (not #private fields) so
// that a Proxy of the context or an object made from it reaches them, and out of Object.keys.
const NODE = Symbol("node");
const IDENTITY = Symbol("identity");
const SERVED = Symbol("served");
const OUTBOX = Symbol("outbox");
const TRACEPARENT = Symbol("traceparent");
const LOG = Symbol("log");
const INHERITED = Symbol("inherited");

class HandlerCall<State> {
  readonly name: string;
  readonly address: string;
  readonly instance: number;
  readonly store: ActorStore;
  state: State;
  readonly envelope: Envelope;
  readonly deadline: number;
  readonly [NODE]: MeshNode;
  readonly [IDENTITY]: Identity;
  readonly [SERVED]: ServedRequest | undefined;
  readonly [OUTBOX]: Outbox | undefined;
  /** This handler's span, as a traceparent: a hash of the message id, computed only when the handler sends something. */
  [TRACEPARENT]: string | undefined;
  /** Bound on first use: most calls never log, and a logger per call showed in profiles. */
  [LOG]: Logger | undefined;
  /** The options of a message sent without options of its own, shared by every such message of the call. */
  [INHERITED]: EnvelopeOptions | undefined;

  constructor(node: MeshNode, identity: Identity, state: State, envelope: Envelope, served: ServedRequest | undefined, deadline: number, durable: { store: ActorStore; outbox: Outbox } | undefined) {
    this.name = identity.name;
    this.address = identity.address;
    this.instance = identity.instance;
    this.store = durable ? durable.store : identity.store;
    this.state = state;
    this.envelope = envelope;
    this.deadline = deadline;
    this[NODE] = node;
    this[IDENTITY] = identity;
    this[SERVED] = served;
    this[OUTBOX] = durable?.outbox;
    this[TRACEPARENT] = undefined;
    this[LOG] = undefined;
    this[INHERITED] = undefined;
  }

  get log(): Logger {
    return (this[LOG] ??= this[IDENTITY].log.with({ trace_id: this.envelope.trace_id, message_id: this.envelope.message_id }));
  }

  get signal(): AbortSignal {
    // Nothing cancels an event: its signal never aborts.
    return this[SERVED] ? this[SERVED].signal : new AbortController().signal;
  }
}

type Call = HandlerCall<unknown>;

/** The functions of a context, each made for it on first use from the context it was read on. */
const FUNCTIONS: { [Name in "record" | "request" | "send" | "publish" | "writable" | "progress" | "reply"]: (ctx: Call) => ActorContext[Name] } = {
  record: (ctx) => (event) => ctx[IDENTITY].record({ trace_id: ctx.envelope.trace_id, message_id: ctx.envelope.message_id, ...event }),
  request: (ctx) => async (to, payload, options) => {
    const inherited = inherit(ctx, options);
    const opts = inherited.timeoutMs === undefined && inherited.ttl === undefined ? { ...inherited, timeoutMs: Math.max(1, ctx.deadline - Date.now()) } : inherited;
    return (await ctx[NODE].request(toRoute(to), payload, opts)).payload;
  },
  send: (ctx) => (to, payload, options) => {
    const outbox = ctx[OUTBOX];
    if (!outbox) return ctx[NODE].send(toRoute(to), payload, inherit(ctx, options));
    stage(ctx[NODE], ctx.address, outbox, toRoute(to), payload, inherit(ctx, options), true);
    return COMMITTED_LATER;
  },
  publish: (ctx) => (topic, payload, options) => {
    const outbox = ctx[OUTBOX];
    return outbox ? stage(ctx[NODE], ctx.address, outbox, { topic }, payload, inherit(ctx, options), false) : ctx[NODE].publish(topic, payload, inherit(ctx, options));
  },
  writable: (ctx) => () => ctx[NODE].writable(),
  progress: (ctx) => (payload) => ctx[SERVED]?.progress(payload),
  reply: (ctx) => (payload) => ctx[SERVED]?.respond(payload),
};

// Accessors on the prototype: made on first read and kept (`ctx.send === ctx.send`), and a
// handler's own replacement (`ctx.send = wrapped`) is what later reads get.
for (const [name, make] of Object.entries(FUNCTIONS) as Array<[string, (ctx: Call) => unknown]>) {
  const kept = Symbol(name);
  Object.defineProperty(HandlerCall.prototype, name, {
    get(this: Call & Record<symbol, unknown>) {
      return (this[kept] ??= make(this));
    },
    set(this: Record<symbol, unknown>, value: unknown) {
      this[kept] = value;
    },
    configurable: true,
  });
}

/**
 * The options of a message sent from a call: the trace continues (same trace_id and context_id,
 * a traceparent naming this span). Without options of its own, every message of the call shares
 * one frozen object (a handler that sends many paid two objects per message).
 */
function inherit<T extends EnvelopeOptions & RequestOptions>(ctx: Call, options: T | undefined): T {
  if (options === undefined) return (ctx[INHERITED] ??= deepFreeze(inheritFrom(ctx, undefined))) as T;
  return inheritFrom(ctx, options);
}

function inheritFrom<T extends EnvelopeOptions>(ctx: Call, options: T | undefined): T {
  const envelope = ctx.envelope;
  return {
    trace_id: envelope.trace_id,
    ...(envelope.context_id !== undefined && { context_id: envelope.context_id }),
    ...options,
    headers: { ...options?.headers, traceparent: (ctx[TRACEPARENT] ??= childTraceparent(envelope)) },
  } as unknown as T;
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
