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
 * rewritten), and a request's default deadline is what is left of the current one. A plain
 * object, so a handler may spread it or replace a member (a class with its functions made on
 * first use measured no faster: bench/loopback.ts actor).
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
  // The trace continues: same trace_id and context_id, and a traceparent naming this handler's
  // span, computed (a hash of the message id) only when the handler sends something.
  let traceparent: string | undefined;
  const inherit = <T extends EnvelopeOptions>(options: T | undefined): T =>
    ({
      trace_id: envelope.trace_id,
      ...(envelope.context_id !== undefined && { context_id: envelope.context_id }),
      ...options,
      headers: { ...options?.headers, traceparent: (traceparent ??= childTraceparent(envelope)) },
    }) as unknown as T;
  let log: Logger | undefined;
  // Identity's fields one by one, not spread: a literal of one shape is built much faster than a
  // copy of another object's properties (the spread showed in the sink's profile).
  return {
    name: identity.name,
    address: identity.address,
    instance: identity.instance,
    // Bound on first use: most calls never log, and a logger per call showed in profiles.
    get log() {
      return (log ??= identity.log.with({ trace_id: envelope.trace_id, message_id: envelope.message_id }));
    },
    store: durable ? durable.store : identity.store,
    record: (event) => identity.record({ trace_id: envelope.trace_id, message_id: envelope.message_id, ...event }),
    state,
    envelope,
    deadline,
    get signal() {
      // Nothing cancels an event: its signal never aborts.
      return served ? served.signal : new AbortController().signal;
    },
    request: async (to, payload, options) => {
      const left = Math.max(1, deadline - Date.now());
      const opts = inherit(options);
      if (opts.timeoutMs === undefined && opts.ttl === undefined) opts.timeoutMs = left;
      return (await node.request(toRoute(to), payload, opts)).payload;
    },
    send: (to, payload, options) => {
      if (!durable) return node.send(toRoute(to), payload, inherit(options));
      stage(node, identity.address, durable.outbox, toRoute(to), payload, inherit(options), true);
      return COMMITTED_LATER;
    },
    writable: () => node.writable(),
    publish: (topic, payload, options) =>
      durable ? stage(node, identity.address, durable.outbox, { topic }, payload, inherit(options), false) : node.publish(topic, payload, inherit(options)),
    progress: (payload) => served?.progress(payload),
    reply: (payload) => served?.respond(payload),
  };
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
