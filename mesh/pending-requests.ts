/**
 * The requests a member has sent and waits for: each one's answer found by its id, on whatever
 * connection it comes; its deadline behind one timer for all; a second wait for the same id (a
 * client's retry) joined to the first; the outcome of each told as it settles. The other side,
 * the requests a member serves, is mesh/requests.ts.
 */
import { type Envelope, type Payload, MessageType } from "./envelope.ts";
import { ErrorCode, HermesError } from "./errors.ts";

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

/** setTimeout's longest delay: a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

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
 * request cost more than the rest of a round trip's bookkeeping, and a set of ids per slot about
 * 0.1 us a request in a scratch loop). A request that ends is only counted out; its slot forgets
 * its list when nobody in it waits any more, and compacts it when fewer than a quarter still
 * wait, so a slot holds at most about four times the requests still waiting in it (or 64). The
 * timer is unref'd while nobody waits.
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

  /** Files `pending` under the slot at or after `now` (performance.now()) + timeoutMs; returns the slot. */
  add(pending: Pending, timeoutMs: number, now: number): DeadlineSlot {
    const at = Math.ceil((now + timeoutMs) / DEADLINE_GRAIN_MS) * DEADLINE_GRAIN_MS;
    let slot = this.#newest;
    if (slot === undefined || slot.at !== at) {
      slot = this.#slots.get(at);
      if (!slot) this.#slots.set(at, (slot = { at, filed: [], live: 0 }));
      this.#newest = slot;
    }
    slot.filed.push(pending);
    slot.live++;
    if (this.#waiting++ === 0) this.#timer?.ref?.();
    if (at < this.#timerAt) this.#arm(at, now);
    return slot;
  }

  /** A request filed under `slot` no longer waits (the caller has marked it ended). */
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
    // The monotonic clock: a wall clock stepped back (NTP, a resumed VM) must not delay timeouts.
    const now = performance.now();
    const pending: Pending = { request, promise, resolve, reject, onProgress: options.onProgress, slot: undefined, ended: false, timeoutMs, filedAt: now };
    pending.slot = this.#deadlines.add(pending, timeoutMs, now);
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
