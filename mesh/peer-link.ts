import { remainingTtl, takeWaitOff, type Envelope } from "./envelope.ts";
import { HermesError, ErrorCode } from "./errors.ts";
import { approximateBytes } from "./frames.ts";
import type { LinkEnvelopeHandler, LinkSettings, MeshLink, MeshTransport } from "./transport.ts";

/** An envelope that could not be delivered, kept for inspection. */
export interface DeadLetter {
  envelope: Envelope;
  destination: string;
  error: ReturnType<HermesError["toPayload"]>;
  at: number;
  /**
   * Set when the payload was let go to keep the list within its byte budget: about how many bytes
   * it was. The envelope is kept without it (`payload: {}`): its id, route, trace and error stay.
   */
  payloadDroppedBytes?: number;
}

/** How much a node's dead-letter list keeps. */
export interface DeadLetterLimits {
  /** Letters kept, newest; the oldest go first. Default 1,000. */
  max?: number;
  /** Bytes of payloads kept (approximate sizes); past it the oldest letters keep no payload. Default 64 MiB. */
  maxBytes?: number;
}

export const DEFAULT_DEAD_LETTERS = 1000;
export const DEFAULT_DEAD_LETTER_BYTES = 64 * 1024 * 1024;

/**
 * The envelopes a node gave up on (docs/protocol.md §4): the newest `max` letters, and of their
 * payloads no more than `maxBytes`, so a poison message of many megabytes given up on again and
 * again cannot grow the sender without bound. `total` counts every letter ever added (the
 * heartbeat's `dead_letters` counter), also those no longer kept.
 *
 * @example
 * const letters = new DeadLetters({ max: 100, maxBytes: 1 << 20 });
 * letters.add(envelope, "echo", new HermesError(ErrorCode.UNAVAILABLE, "gave up after 10 delivery attempts"));
 * letters.list()[0]!.payloadDroppedBytes; // undefined while the payloads fit in 1 MiB
 */
export class DeadLetters {
  readonly capacity: number;
  readonly maxBytes: number;
  #items: DeadLetter[] = [];
  /** The approximate payload size of each letter in #items, 0 once its payload is let go. */
  #sizes: number[] = [];
  #bytes = 0;
  /** Letters before this index have no payload left. */
  #bodiesFrom = 0;
  #total = 0;

  constructor(limits: DeadLetterLimits = {}) {
    ({ max: this.capacity, maxBytes: this.maxBytes } = resolveDeadLetterLimits(limits));
  }

  /** Letters kept now. */
  get size(): number {
    return this.#items.length;
  }

  /** Letters added since the node started, kept or not. */
  get total(): number {
    return this.#total;
  }

  /** Payload bytes kept now (approximate). */
  get bytes(): number {
    return this.#bytes;
  }

  add(envelope: Envelope, destination: string, error: HermesError): void {
    this.#total++;
    this.#items.push({ envelope, destination, error: error.toPayload(), at: Date.now() });
    const size = approximateBytes(envelope.payload);
    this.#sizes.push(size);
    this.#bytes += size;
    if (this.#items.length > this.capacity) {
      this.#items.shift();
      this.#bytes -= this.#sizes.shift()!;
      if (this.#bodiesFrom > 0) this.#bodiesFrom--;
    }
    // A payload alone over the budget goes at once, and takes no older one with it; else the oldest go first.
    if (size > this.maxBytes) this.#dropPayload(this.#items.length - 1);
    while (this.#bytes > this.maxBytes && this.#bodiesFrom < this.#items.length) this.#dropPayload(this.#bodiesFrom++);
  }

  /** Oldest first. */
  list(): readonly DeadLetter[] {
    return this.#items;
  }

  #dropPayload(index: number): void {
    const size = this.#sizes[index]!;
    if (size === 0) return;
    const letter = this.#items[index]!;
    // The same letter object: whoever already holds it (the dashboard's sampler) sees the change.
    letter.envelope = { ...letter.envelope, payload: {} };
    letter.payloadDroppedBytes = size;
    this.#sizes[index] = 0;
    this.#bytes -= size;
  }
}

/**
 * The limits with their defaults; code 2 naming the field when one is not a whole number in range
 * (max at least 1, maxBytes at least 0), so a client can refuse them before it joins.
 *
 * @example
 * resolveDeadLetterLimits({ max: 10 }); // { max: 10, maxBytes: 67108864 }
 */
export function resolveDeadLetterLimits(limits: DeadLetterLimits = {}): Required<DeadLetterLimits> {
  return { max: positiveLimit(limits.max, DEFAULT_DEAD_LETTERS, "max"), maxBytes: positiveLimit(limits.maxBytes, DEFAULT_DEAD_LETTER_BYTES, "maxBytes", true) };
}

function positiveLimit(value: number | undefined, fallback: number, name: string, zeroAllowed = false): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < (zeroAllowed ? 0 : 1)) {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `deadLetters.${name} must be a whole number ${zeroAllowed ? "of 0 or more" : "of 1 or more"}, not ${String(value)}`, { reason: `deadLetters.${name}`, expected: zeroAllowed ? "an integer >= 0" : "an integer >= 1" });
  }
  return value;
}

/** Envelopes a link holds for a destination being dialled before producers are asked to wait. */
const ROOM_WHILE_AWAY = 4096;

/** Where a ramp after a break ends: from this many at once, all that waits goes (see PeerLink.#ramp). */
const RAMP_OPEN = 64;
/** How long a ramp's step waits for its acks before the next step goes anyway (a handler may run for minutes). */
const RAMP_STEP_MS = 50;

/** How a link finds and treats its destination. */
export interface PeerLinkOptions {
  /** Destination address, for errors and logs. */
  address: string;
  /** The destination's current socket path (from the registry), or undefined while unknown. */
  endpoint: () => string | undefined;
  /** How the destination is reached. */
  transport: MeshTransport;
  /** Hello settings of this side. */
  connection: LinkSettings;
  /** Deliveries before an envelope is dead-lettered. Default 10 (docs/protocol.md §4). */
  maxAttempts?: number;
  /** Envelopes the peer sends back on this connection (answers to our requests, mostly). */
  onEnvelope: LinkEnvelopeHandler;
  /** An envelope ran out of attempts. */
  onDeadLetter: (env: Envelope, error: HermesError) => void;
  /** An envelope's ttl ran out while it waited for the destination. */
  onExpired: (env: Envelope) => void;
  /** An envelope that waited turned out unsendable (too deep, over the peer's frame limit): answer for it. */
  onUnsendable: (env: Envelope, error: HermesError) => void;
  /** The peer acknowledged this envelope (handled it). */
  onAcknowledged?: (env: Envelope) => void;
  /** The connection broke and what it left unacknowledged waits in the link again (the node may move some: takeBack). */
  onBroken?: () => void;
  /** Envelopes wait here and the destination cannot be reached (a break, a failed dial): once until the next connection. */
  onAway?: () => void;
  /** Reconnect backoff: first delay and ceiling, ms. Default 5 and 500. */
  backoff?: { initialMs?: number; maxMs?: number };
}

/**
 * An envelope waiting for the destination, and since when: its ttl counts down from then. (On a
 * connection, the connection keeps that time, and hands the envelope back with the wait taken
 * off its ttl. Nothing is kept on the envelope itself: a WeakMap entry per envelope cost the send
 * path 0.4 to 0.7 us, and a symbol-keyed property doubled the time msgpackr takes to walk it.)
 */
interface Waiting {
  env: Envelope;
  since: number;
}

/**
 * The sending side's hold on one destination instance. Keeps every envelope until the peer
 * acknowledges it; when the connection breaks (the actor crashed), it redials with backoff
 * and jitter, one dial at a time, and resends what was unacknowledged with `attempt + 1`,
 * its ttl reduced by the time spent waiting. Nothing is dropped silently: an envelope leaves
 * only acknowledged, dead-lettered after `maxAttempts`, or expired.
 */
export class PeerLink {
  readonly address: string;
  #options: PeerLinkOptions;
  #maxAttempts: number;
  #connection: MeshLink | undefined;
  #queue: Waiting[] = [];
  #dialing = false;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #failures = 0;
  #closed = false;
  #opened: PromiseWithResolvers<void> | undefined;
  #lastError: HermesError | undefined;
  /** onAway was called since the last connection. */
  #awaySaid = false;
  /**
   * After a break that left envelopes unacknowledged, the next connection gets what waits a few
   * at a time: `#ramp` envelopes (the step, `#rampStep`), then twice as many once all of those
   * are acknowledged, until RAMP_OPEN (0: not ramping). Why: a break counts an attempt for every envelope on the
   * connection, so a message that crashes its receiver every time (a poison message) took every
   * envelope sent with it through its ten crashes, and all of them were dead-lettered with it.
   * Ramping, the poison is soon alone on the connection: the others lose an attempt or two, and
   * a restart costs a few round trips more. A step whose acks do not come within RAMP_STEP_MS
   * (a long handler) is followed by another of the same size, so nothing stalls behind it; a
   * poison slower than that still takes the envelopes sent in the meantime with it.
   */
  #ramp = 0;
  #rampStep = new Set<Envelope>();
  #rampTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: PeerLinkOptions) {
    this.address = options.address;
    this.#options = options;
    this.#maxAttempts = options.maxAttempts ?? 10;
  }

  /** The open connection, if any. */
  get connection(): MeshLink | undefined {
    return this.#connection?.isOpen ? this.#connection : undefined;
  }

  /** Envelopes waiting for the destination (not yet on a connection). */
  get queued(): number {
    return this.#queue.length;
  }

  /** Envelopes on the connection, not yet acknowledged. */
  get inFlight(): number {
    return this.#connection ? this.#connection.inFlight + this.#connection.backlogged : 0;
  }

  /** Hands an envelope to the link; it goes out now or as soon as the destination is reachable. */
  send(env: Envelope, settles?: { connection: MeshLink; seq: number }): void {
    if (this.#closed) throw new HermesError(ErrorCode.UNAVAILABLE, `link to ${this.address} is closed`);
    const direct = this.#direct;
    if (direct) {
      direct.send(env);
    } else {
      // While ramping it waits its turn behind what waited before it.
      this.#queue.push({ env, since: Date.now() });
      if (!this.connection) this.#ensureDialing();
    }
    settles?.connection.settle(settles.seq);
  }

  /** The destination is (back) up, per the registry: try now instead of waiting out the backoff. */
  notifyUp(): void {
    if (this.#closed || this.connection || this.#queue.length === 0) return;
    this.#failures = 0;
    if (this.#retryTimer) {
      clearTimeout(this.#retryTimer);
      this.#retryTimer = undefined;
    }
    this.#ensureDialing();
  }

  /**
   * Takes out of the link what waits for the destination (not what is on an open connection)
   * and `wanted` chooses, oldest first, each with its wait taken off its ttl and ready to be sent
   * anew (one whose ttl ran out meanwhile expires instead, as when it is sent): how a node moves
   * envelopes off an instance that crashed to a healthy sibling.
   *
   * @example
   * for (const env of link.takeBack((env) => env.capability !== undefined)) otherLink.send(env);
   */
  takeBack(wanted: (env: Envelope) => boolean): Envelope[] {
    if (this.connection || this.#queue.length === 0) return [];
    const taken: Envelope[] = [];
    const kept: Waiting[] = [];
    const now = Date.now();
    for (const waiting of this.#queue) {
      if (!wanted(waiting.env)) {
        kept.push(waiting);
        continue;
      }
      const env = this.#readyAgain(waiting, now);
      if (env) taken.push(env);
    }
    this.#queue = kept;
    // Producers waiting for room in this link's queue may go on.
    if (taken.length > 0) this.#wakeOpened();
    return taken;
  }

  /** Opens the connection now (e.g. to be ready before the first message). */
  async open(): Promise<MeshLink> {
    if (this.connection) return this.connection;
    await this.#dial();
    if (!this.connection) throw this.#lastError ?? new HermesError(ErrorCode.UNAVAILABLE, `cannot reach ${this.address}`);
    return this.connection;
  }

  /**
   * True while a producer may go on sending: the connection has room, or, while the
   * destination is being dialled or the link ramps up after a break, fewer than ROOM_WHILE_AWAY
   * envelopes wait for it.
   */
  get hasRoom(): boolean {
    if (this.#closed) return true;
    const direct = this.#direct;
    return direct ? direct.hasRoom : this.#queue.length < ROOM_WHILE_AWAY;
  }

  /** The open connection when sends go straight to it: not while the link ramps up after a break (they queue then). */
  get #direct(): MeshLink | undefined {
    return this.#ramp === 0 ? this.connection : undefined;
  }

  /** Resolves at once while there is room; else when the destination has taken enough (or the link closed). */
  async whenRoom(): Promise<void> {
    while (!this.hasRoom) {
      const direct = this.#direct;
      if (direct) await direct.whenRoom();
      else await (this.#opened ??= Promise.withResolvers<void>()).promise;
    }
  }

  /** Closes the link; what it still held (sent and not acknowledged, then queued) is returned to the caller, oldest first. */
  async close(): Promise<Envelope[]> {
    this.#closed = true;
    this.#wakeOpened();
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#stopRampTimer();
    // Let go of the connection first: its #onBroken must not move what it held into a closed
    // link's queue, where nothing would ever return or dead-letter it.
    const connection = this.#connection;
    this.#connection = undefined;
    await connection?.close();
    const now = Date.now();
    const left = [...(connection?.unacknowledged() ?? []), ...this.#queue.map((waiting) => takeWaitOff(waiting, now))];
    this.#queue = [];
    return left;
  }

  /** Producers waiting for a destination that was away: it is back (or the link is gone). */
  #wakeOpened(): void {
    const opened = this.#opened;
    this.#opened = undefined;
    opened?.resolve();
  }

  #ensureDialing(): void {
    if (this.#dialing || this.#retryTimer || this.#closed) return;
    void this.#dial();
  }

  async #dial(): Promise<void> {
    if (this.#dialing || this.#closed) return;
    this.#dialing = true;
    try {
      const endpoint = this.#options.endpoint();
      if (!endpoint) throw new HermesError(ErrorCode.UNROUTABLE, `no endpoint known for ${this.address}`, { target: this.address });
      const connection = await this.#options.transport.dial(endpoint, this.#options.connection);
      if (this.#closed) {
        await connection.close();
        return;
      }
      this.#adopt(connection);
    } catch (error) {
      this.#lastError = HermesError.from(error, ErrorCode.UNAVAILABLE);
      // A refusal (a wrong token, socket permissions) does not pass with time: what waits is
      // refused now with that code, instead of retrying until every deadline has passed.
      if (this.#lastError.code === ErrorCode.AUTH_FAILED) {
        const refused = this.#queue;
        this.#queue = [];
        const now = Date.now();
        for (const waiting of refused) this.#options.onDeadLetter(takeWaitOff(waiting, now), this.#lastError);
      } else {
        this.#away();
        this.#scheduleRetry();
      }
    } finally {
      this.#dialing = false;
    }
  }

  #adopt(connection: MeshLink): void {
    this.#connection = connection;
    this.#failures = 0;
    this.#awaySaid = false;
    this.#wakeOpened();
    connection.onEnvelope = this.#options.onEnvelope;
    connection.onAcknowledged = this.#ramp > 0 ? this.#rampAcknowledged : this.#options.onAcknowledged;
    connection.onUnsendable = this.#options.onUnsendable;
    connection.onDeadLetter = this.#options.onDeadLetter;
    connection.closed.then(() => this.#onBroken(connection));
    if (this.#ramp === 0) this.#sendWaiting(connection, Infinity);
    else this.#rampUp(connection, 1);
  }

  /**
   * Sends up to `max` of what waits, oldest first, with the wait taken off each ttl: one that ran
   * out expires, one the connection refuses is answered for (neither counts). Returns how many
   * went, each added to `sent` when given.
   */
  #sendWaiting(connection: MeshLink, max: number, sent?: Set<Envelope>): number {
    const queue = this.#queue;
    const now = Date.now();
    let count = 0;
    let taken = 0;
    while (count < max && taken < queue.length) {
      const env = this.#readyAgain(queue[taken++]!, now);
      if (!env) continue;
      try {
        connection.send(env);
        count++;
        sent?.add(env);
      } catch (error) {
        this.#options.onUnsendable(env, HermesError.from(error));
      }
    }
    this.#queue = taken === queue.length ? [] : queue.slice(taken);
    return count;
  }

  /** A waiting envelope with its wait taken off its ttl and no seq, to go out anew; undefined (expired) when no ttl is left. */
  #readyAgain(waiting: Waiting, now: number): Envelope | undefined {
    const env = takeWaitOff(waiting, now);
    if (env.ttl <= 0) {
      this.#options.onExpired(env);
      return undefined;
    }
    delete env.seq;
    return env;
  }

  /** The connection's acks while ramping: once the current step's are all in, the next, twice the size. */
  #rampAcknowledged = (env: Envelope): void => {
    this.#options.onAcknowledged?.(env);
    if (this.#rampStep.delete(env) && this.#rampStep.size === 0 && this.#connection?.isOpen) this.#rampUp(this.#connection, 2);
  };

  /**
   * The next step of the ramp, `growth` times the size of the last: from RAMP_OPEN, or with
   * nothing left to send, the ramp ends and everything goes. A step whose acks do not all come
   * within RAMP_STEP_MS (a long handler, and acks are cumulative) is followed by one of the same size.
   */
  #rampUp(connection: MeshLink, growth: number): void {
    this.#stopRampTimer();
    this.#ramp *= growth;
    this.#rampStep = new Set();
    if (this.#ramp >= RAMP_OPEN || this.#sendWaiting(connection, this.#ramp, this.#rampStep) === 0) {
      this.#ramp = 0;
      connection.onAcknowledged = this.#options.onAcknowledged;
      this.#sendWaiting(connection, Infinity);
    } else {
      this.#rampTimer = setTimeout(() => {
        this.#rampTimer = undefined;
        if (this.#connection === connection && connection.isOpen) this.#rampUp(connection, 1);
      }, RAMP_STEP_MS);
    }
    this.#wakeOpened();
  }

  #stopRampTimer(): void {
    clearTimeout(this.#rampTimer);
    this.#rampTimer = undefined;
  }

  #onBroken(connection: MeshLink): void {
    if (this.#connection !== connection) return;
    this.#connection = undefined;
    this.#lastError = connection.closeError ?? new HermesError(ErrorCode.UNAVAILABLE, `connection to ${this.address} closed`);
    const unacked = connection.unacknowledged();
    const now = Date.now();
    const redeliver: Waiting[] = [];
    for (const env of unacked) {
      if (env.seq !== undefined) env.attempt = (env.attempt ?? 1) + 1; // it went out once already
      if ((env.attempt ?? 1) > this.#maxAttempts) {
        this.#options.onDeadLetter(env, new HermesError(ErrorCode.UNAVAILABLE, `gave up after ${this.#maxAttempts} delivery attempts to ${this.address}`, {
          retry_after_ms: 1000,
          last_error: this.#lastError.message,
        }));
      } else {
        redeliver.push({ env, since: now });
      }
    }
    this.#queue = [...redeliver, ...this.#queue];
    this.#ramp = redeliver.length > 0 ? 1 : 0;
    this.#rampStep = new Set();
    this.#stopRampTimer();
    if (this.#queue.length === 0 || this.#closed) return;
    this.#options.onBroken?.();
    this.#away();
    this.#scheduleRetry();
  }

  /** What waits (the node may have moved it all: onBroken) cannot reach the destination: said once per outage. */
  #away(): void {
    if (this.#awaySaid || this.#queue.length === 0 || this.#closed) return;
    this.#awaySaid = true;
    this.#options.onAway?.();
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retryTimer || this.#queue.length === 0) return;
    this.#purgeExpired();
    if (this.#queue.length === 0) return;
    const { initialMs = 5, maxMs = 500 } = this.#options.backoff ?? {};
    const base = Math.min(maxMs, initialMs * 2 ** Math.min(this.#failures++, 16));
    const delay = base * (0.8 + Math.random() * 0.4);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#ensureDialing();
    }, delay);
  }

  #purgeExpired(): void {
    const now = Date.now();
    const alive: Waiting[] = [];
    for (const waiting of this.#queue) {
      // Only the expired ones are rewritten: the others keep counting from when they came.
      if (remainingTtl(waiting.env, waiting.since, now) <= 0) this.#options.onExpired(takeWaitOff(waiting, now));
      else alive.push(waiting);
    }
    this.#queue = alive;
  }
}

/**
 * The ways back to a requester. An answer goes on the connection its request came on while
 * that is open; if it broke (the requester redialled), on any open connection from the same
 * node; else through `fallback` (a link found in the registry). With none of those, the
 * requester's redelivery fetches the answer from the dedupe memory.
 */
export class ReplyPaths {
  #byPeer = new Map<string, Set<MeshLink>>();
  #fallback: (to: string, reply: Envelope) => void;

  constructor(fallback: (to: string, reply: Envelope) => void) {
    this.#fallback = fallback;
  }

  /** Remembers an accepted connection under its peer's node name until it closes. */
  track(connection: MeshLink): void {
    const peer = connection.peer!.node;
    let set = this.#byPeer.get(peer);
    if (!set) this.#byPeer.set(peer, (set = new Set()));
    set.add(connection);
    connection.closed.then(() => {
      set.delete(connection);
      if (set.size === 0 && this.#byPeer.get(peer) === set) this.#byPeer.delete(peer);
    });
  }

  /** Sends `reply`; `seq` (of the request on `origin`) is settled when it goes out there. */
  send(reply: Envelope, origin?: MeshLink, seq?: number): void {
    if (origin?.isOpen) {
      origin.send(reply, seq);
      return;
    }
    const to = reply.target_agent!;
    for (const connection of this.#byPeer.get(to) ?? []) {
      if (connection.isOpen) {
        connection.send(reply);
        return;
      }
    }
    this.#fallback(to, reply);
  }
}
