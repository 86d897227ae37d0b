import { MeshNode, type InboundEvent, type MeshNodeOptions } from "../../mesh/mesh-node.ts";
import { ServedRequest, type RunHooks } from "../../mesh/requests.ts";
import { createReply, MessageType, ttlDeadline, type Envelope } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { handlerContext, initContext, type InitContext, type Outbox } from "./actor-context.ts";
import { memoryStore, stagedStore, type ActorStore } from "./actor-store.ts";
import type { DurableStore } from "./durable-store.ts";
import type { ActorDefinition } from "./define-actor.ts";
import type { Logger } from "../../mesh/logger.ts";
import { Mailbox } from "./mailbox.ts";
import { ActorMetrics } from "../observability/actor-metrics.ts";
import type { EventLog } from "../observability/event-log.ts";

/** A durable handler call's staged effects; `committed` once staged for its message's commit. */
interface Effects {
  staged: { writes: Map<string, unknown>; outbox: Outbox };
  view: { store: ActorStore; outbox: Outbox };
  committed: boolean;
}

/** What waits in the mailbox: a request being served, or an event (told apart by class, with no wrapper object per message). */
type Work = ServedRequest | InboundEvent;

/** What a runtime needs its mesh node to call (joinMesh passes them to the node it starts). */
export type RuntimeNodeHandlers = Pick<MeshNodeOptions, "onRequest" | "onEvent" | "onSent" | "dedupe" | "onDelivered">;

/**
 * Who this runtime is. The node settings (socketPath, routes, pick, ...) are for `start()`
 * without a node, which starts one itself: a runtime outside any mesh, as tests run it.
 */
export interface ActorRuntimeOptions extends Partial<Omit<MeshNodeOptions, keyof RuntimeNodeHandlers | "address">> {
  address: string;
  name: string;
  instance: number;
  log: Logger;
  /** Overrides the definition's concurrency (the mesh file's setting). */
  concurrency?: number;
  /** Durable mode: dedupe set, outbox and state in this store, committed per handled message. */
  durable?: DurableStore;
  /** Where handled and sent messages are logged (JSON Lines); none when omitted. */
  events?: EventLog;
}

/**
 * Runs one actor instance: its mesh node, its priority mailbox and up to `concurrency`
 * handlers at a time. A request waiting in the mailbox past its deadline is answered with
 * code 9 without running; a handler that throws answers code 7 (or its HermesError's code)
 * and the actor keeps going; a handler past its deadline is answered with code 3.
 */
export class ActorRuntime<State = unknown> {
  readonly definition: ActorDefinition<State>;
  readonly concurrency: number;
  #options: ActorRuntimeOptions;
  #node!: MeshNode;
  #mailbox = new Mailbox<Work>();
  #running = 0;
  #state!: State;
  #identity: { name: string; address: string; instance: number; log: Logger; store: ActorStore; record: (event: Record<string, unknown> & { event: string }) => void };
  #durable: DurableStore | undefined;
  #events: EventLog | undefined;
  #metrics = new ActorMetrics();
  #started = false;
  #stopping = false;
  #idle: Array<() => void> = [];
  #handled = 0;
  /** True while #drain's loop runs: a handler finishing inside it lets the loop go on instead of recursing. */
  #draining = false;

  constructor(definition: ActorDefinition<State>, options: ActorRuntimeOptions) {
    this.definition = definition;
    this.#options = options;
    this.concurrency = options.concurrency ?? definition.concurrency ?? 1;
    this.#durable = options.durable;
    this.#events = options.events;
    const events = options.events;
    this.#identity = {
      name: options.name,
      address: options.address,
      instance: options.instance,
      log: options.log,
      store: options.durable ?? memoryStore(),
      record: (event) => events?.write(event),
    };
  }

  /** The mesh node (for routing updates and stats). */
  get node(): MeshNode {
    return this.#node;
  }

  /** Counters since this process started (sent with heartbeats). */
  get metrics(): ActorMetrics {
    return this.#metrics;
  }

  /** Messages waiting, handlers running, messages handled so far. */
  get load(): { queueDepth: number; inFlight: number; handled: number } {
    return { queueDepth: this.#mailbox.size, inFlight: this.#running, handled: this.#handled };
  }

  /** The handlers of this runtime's node: requests and events into the mailbox, the durable store's dedupe and outbox, the event log. */
  get nodeHandlers(): RuntimeNodeHandlers {
    const durable = this.#durable;
    const events = this.#events;
    return {
      ...(events && { onSent: (env: Envelope, destinations: readonly string[]) => events.sent(env, destinations) }),
      ...(durable && { dedupe: durable, onDelivered: (env: Envelope, destination: string) => durable.delivered(env.message_id, destination) }),
      onRequest: (request) => this.#enqueue(request, request.request.priority),
      onEvent: (event) => this.#enqueue(event, event.envelope.priority),
    };
  }

  /**
   * Runs `init`, then starts handling. `node` must have been started with {@link nodeHandlers}
   * (joinMesh does it); without one, the runtime starts its own from its options. Messages
   * arriving during init wait in the mailbox.
   */
  async start(node?: MeshNode): Promise<void> {
    const durable = this.#durable;
    if (node) {
      this.#node = node;
    } else {
      const { routes, pick } = this.#options;
      if (!routes || !pick) throw new Error("ActorRuntime.start() without a node needs routes and pick in its options");
      this.#node = await MeshNode.start({ ...this.#options, routes, pick, ...this.nodeHandlers });
    }
    this.#state = (await this.definition.init?.(this.initContext)) as State;
    this.#started = true;
    // Committed before a crash, not yet acknowledged: sent again, same ids, so nothing is lost or doubled.
    if (durable) for (const { destination, envelope } of durable.pendingOutbox()) this.#node.sendTo(destination, envelope);
    this.#drain();
  }

  /** The context outside handlers. */
  get initContext(): InitContext {
    return initContext(this.#node, this.#identity);
  }

  /** Stops taking work, lets running handlers finish (up to `timeoutMs`), runs onStop, closes the node. */
  async stop(timeoutMs = 5000): Promise<void> {
    this.#stopping = true;
    if (this.#running > 0) {
      const { promise, resolve } = Promise.withResolvers<void>();
      this.#idle.push(resolve);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    }
    try {
      await this.definition.onStop?.({ ...this.initContext, state: this.#state });
    } finally {
      await this.#node.close();
      this.#durable?.close();
    }
  }

  #enqueue(work: Work, priority: number | undefined): void {
    this.#mailbox.push(work, priority ?? 5);
    if (this.#started) this.#drain();
  }

  /**
   * Starts work from the mailbox while fewer than `concurrency` handlers run. A handler that
   * finishes at once (a sync handler) lets the loop go on to the next message, without a
   * promise or a closure per message; one that goes async takes its turn later.
   */
  #drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (this.#running < this.concurrency && !this.#stopping) {
        const work = this.#mailbox.shift();
        if (!work) break;
        this.#running++;
        if (work instanceof ServedRequest) this.#handleRequest(work);
        else this.#handleEvent(work);
      }
    } finally {
      this.#draining = false;
    }
  }

  /** A handler finished (its message observed): the next one may start. */
  #finished(): void {
    this.#running--;
    this.#handled++;
    if (this.#running === 0 && this.#idle.length > 0) for (const resolve of this.#idle.splice(0)) resolve();
    this.#drain();
  }

  #handleRequest(served: ServedRequest): void {
    const startedAt = performance.now();
    let effects: Effects | undefined;
    let answering: void | Promise<void> = undefined;
    try {
      if (this.#mayRun(served)) {
        effects = this.#effects();
        const handler = this.definition.onRequest!;
        const ctx = handlerContext(this.#node, this.#identity, this.#state, served.request, served, served.deadline, effects?.view);
        answering = served.run(() => handler(served.request, ctx), effects ? this.#durableHooks(served, effects) : this.#hooks);
      }
    } catch (error) {
      // served.run answers whatever a handler throws: this is the runtime's own failure.
      served.fail(error);
    }
    if (answering) answering.finally(() => this.#requestDone(served, effects, startedAt));
    else this.#requestDone(served, effects, startedAt);
  }

  /** False (and the request answered) when it was cancelled while it waited, its ttl ran out, or this actor takes no requests. */
  #mayRun(served: ServedRequest): boolean {
    if (served.done) return false;
    if (Date.now() > served.deadline) {
      served.fail(new HermesError(ErrorCode.TTL_EXPIRED, "ttl ran out while waiting in the mailbox", { ttl: served.request.ttl }));
      return false;
    }
    if (!this.definition.onRequest) {
      served.fail(new HermesError(ErrorCode.UNROUTABLE, `${this.#identity.address} takes no requests`, { target: this.#identity.address, known: [] }));
      return false;
    }
    return true;
  }

  #requestDone(served: ServedRequest, effects: Effects | undefined, startedAt: number): void {
    try {
      if (effects) this.#afterCommit(served.request.message_id, effects);
      const answer = served.answer;
      this.#observe(served.request, startedAt, answer?.message_type === "error" ? Number(answer.payload.error_code) : undefined);
    } catch (error) {
      failLater(error);
    }
    this.#finished();
  }

  /** What a handler that throws something other than a HermesError leaves in the actor's log. */
  #hooks: RunHooks = {
    onThrow: (error, request) => {
      if (!(error instanceof HermesError)) this.#identity.log.error("handler threw", { trace_id: request.trace_id, message_id: request.message_id, error: String(error) });
    },
  };

  /**
   * A durable call's answer is committed with its writes and messages (one transaction) before
   * it goes. A commit the disk refuses throws code 6: answered as the handler's error and
   * recorded nowhere, so a resend runs again.
   */
  #durableHooks(served: ServedRequest, effects: Effects): RunHooks {
    return {
      beforeAnswer: (payload) => {
        this.#durable!.commit(served.request.message_id, effects.staged, createReply(MessageType.RESPONSE, served.request, this.#node.address, payload));
        effects.committed = true;
      },
      onThrow: this.#hooks.onThrow,
    };
  }

  /** Metrics and the event log of one handled message. */
  #observe(env: Envelope, startedAt: number, errorCode: number | undefined): void {
    const seconds = (performance.now() - startedAt) / 1000;
    this.#metrics.handled(env.message_type, seconds, errorCode);
    const attempt = env.attempt ?? 1;
    if (attempt > 1) this.#metrics.redelivered();
    const events = this.#events;
    if (!events) return;
    // A binary record, not a JSON line: it is written for every message (src/observability/span-log.ts).
    const durationMs = seconds * 1000;
    // One clock read for both the record's time and its start (a clock read is about 28 ns).
    const now = Date.now();
    events.handled(env, now - durationMs, durationMs, attempt, errorCode, now);
  }

  /** A durable call's staged writes and outbox, and the context view of them. */
  #effects(): Effects | undefined {
    if (!this.#durable) return undefined;
    const writes = new Map<string, unknown>();
    const outbox: Outbox = [];
    return { staged: { writes, outbox }, view: { store: stagedStore(this.#durable, writes), outbox }, committed: false };
  }

  /**
   * Sends what a durable call committed. A call that failed or was answered before it finished
   * (timeout, cancel) staged nothing: its writes and messages are dropped, as a rolled-back
   * transaction's would be.
   */
  #afterCommit(id: string, effects: Effects): void {
    const durable = this.#durable!;
    durable.discard(id);
    if (!effects.committed || durable.lookup(id)?.state !== "done") return;
    for (const { destination, envelope } of effects.staged.outbox) this.#node.sendTo(destination, envelope);
  }

  /** Runs an event's handler; a sync one finishes in this call, like a sync request handler. */
  #handleEvent(event: InboundEvent): void {
    const startedAt = performance.now();
    const env = event.envelope;
    const handler = this.definition.onEvent;
    const effects = this.#effects();
    let running: unknown;
    let threw = false;
    try {
      if (handler) {
        // No signal of its own: nothing cancels an event, and the context makes one if the handler asks.
        // Its deadline counts from now: an event that waited past its ttl still runs (a request would be refused), with its ttl ahead of it.
        running = handler(env, handlerContext(this.#node, this.#identity, this.#state, env, undefined, ttlDeadline(env, Date.now()), effects?.view));
      }
    } catch (error) {
      threw = true;
      this.#eventThrew(env, error);
    }
    if (isThenable(running)) {
      Promise.resolve(running).then(
        () => this.#eventDone(event, effects, startedAt, true),
        (error) => {
          this.#eventThrew(env, error);
          this.#eventDone(event, effects, startedAt, false);
        },
      );
    } else this.#eventDone(event, effects, startedAt, handler !== undefined && !threw);
  }

  #eventThrew(env: Envelope, error: unknown): void {
    this.#identity.log.error("event handler threw", { trace_id: env.trace_id, message_id: env.message_id, error: String(error) });
  }

  #eventDone(event: InboundEvent, effects: Effects | undefined, startedAt: number, succeeded: boolean): void {
    try {
      if (effects && succeeded) {
        this.#durable!.stage(event.envelope.message_id, effects.staged);
        effects.committed = true;
      }
    } catch (error) {
      this.#eventThrew(event.envelope, error);
    } finally {
      try {
        event.done();
      } catch (error) {
        // Not recorded as handled (the durable store's commit refused: a full disk), so not
        // acknowledged, which must not stall this actor: it ends, the supervisor restarts it, and
        // the sender's redelivery brings the event back to be handled again.
        failLater(error);
      }
    }
    try {
      if (effects) this.#afterCommit(event.envelope.message_id, effects);
      this.#observe(event.envelope, startedAt, undefined);
    } catch (error) {
      failLater(error);
    }
    this.#finished();
  }
}

/**
 * A failure after a message was answered (its durable outbox could not be sent, say) ends the
 * process, as an unhandled rejection did before handlers could finish in the same call: the
 * supervisor restarts it and the committed outbox goes out then. Thrown on a later microtask,
 * once the mailbox has moved on, so it never reaches the connection that delivered the message.
 */
function failLater(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as PromiseLike<unknown>).then === "function";
}
