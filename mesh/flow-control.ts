import { Buffer } from "node:buffer";
import { remainingTtl, type Envelope } from "./envelope.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import { approximateBytes } from "./frames.ts";
import { type EncodedRange } from "./codecs.ts";

/**
 * Receiver side of cumulative acknowledgement (docs/protocol.md §4). Envelopes may finish
 * handling out of order (concurrent handlers); the ack may only cover the contiguous prefix of
 * handled sequence numbers.
 */
export class AckTracker {
  /** Highest seq such that every seq <= it has been handled. */
  #contiguous = 0;
  /** Highest seq already sent in an ack. */
  #acked = 0;
  #outOfOrder = new Set<number>();

  /** Marks one envelope handled. Returns true when the ackable point moved. */
  settle(seq: number): boolean {
    if (seq <= this.#contiguous) return false;
    if (seq !== this.#contiguous + 1) {
      this.#outOfOrder.add(seq);
      return false;
    }
    let next = seq;
    if (this.#outOfOrder.size > 0) while (this.#outOfOrder.delete(next + 1)) next++;
    this.#contiguous = next;
    return true;
  }

  /** The seq to acknowledge now, or 0 when nothing new is ackable. */
  takeAck(): number {
    if (this.#contiguous === this.#acked) return 0;
    this.#acked = this.#contiguous;
    return this.#acked;
  }

  /** True when an ack is owed: the ackable point moved since the last ack taken. */
  get ackDue(): boolean { return this.#contiguous !== this.#acked; }

  /** Envelopes handled since the last ack taken. */
  get owed(): number { return this.#contiguous - this.#acked; }

  /** Highest contiguous handled seq. */
  get handledThrough(): number { return this.#contiguous; }
}

/** The part of a Bun socket the write queue needs. */
export interface WritableSocket {
  /**
   * Writes `data[offset..offset+length)` (Bun's socket.write takes the range: no view per write)
   * and returns the bytes taken, possibly fewer: Bun buffers nothing; -1 or 0 when it cannot write.
   */
  write(data: Uint8Array, offset: number, length: number): number;
}

const INITIAL_BYTES = 64 * 1024;
/**
 * Buffer's copy, which takes any Uint8Array as its source and a range of it: about 21 ns for an
 * envelope, where set() of a view of the range took 56 (the view costs more than the copy).
 */
const copyBytes = Buffer.prototype.copy as (this: Uint8Array, target: Uint8Array, targetStart: number, sourceStart: number, sourceEnd: number) => number;
/**
 * Past this many queued bytes a flush happens at once instead of at the end of the turn. Small
 * enough that a receiver answering a big batch of pipelined requests sends the first answers
 * while it handles the rest, so both ends work at once: 256 KiB kept the requester idle until
 * the whole batch was answered (1,000 pipelined requests across cores: 30 to 32 k/s at 256 KiB,
 * 47 to 57 k/s at 32 KiB; one-way streams did not move).
 */
const HIGH_WATER_BYTES = 32 * 1024;

/**
 * Frames written in one event-loop turn are coalesced into one buffer and flushed with one write
 * at the end of the turn, in a setImmediate (at once past a high-water mark, or by `flushNow`).
 * Whatever the kernel does not take is kept and resumed on `drain` (Bun's socket.write buffers
 * nothing). Not at the end of the microtask queue: a runtime drains it after every callback, so
 * the requests Bun.serve hands the gateway together went to the actor one write each, waking it
 * as often, and a producer awaiting each send got a write per frame. At the end of the turn they
 * share one write (bench/gateway-load.ts, five pairs: the calculator's CPU per request 25 to 28
 * us before, 18 to 19 after; the gateway's 50 to 60, then 44 to 48).
 */
export class WriteQueue {
  #socket: WritableSocket;
  #buf = new Uint8Array(INITIAL_BYTES);
  #start = 0;
  #end = 0;
  #scheduled = false;
  #blocked = false;
  #wrote = false; // a frame of this turn went out at once (past the high-water mark)
  #idle: Array<() => void> = [];
  #beforeFlush: ((carriesData: boolean) => void) | undefined;
  #flushTask = () => {
    try {
      // Still marked scheduled while the hook adds its frame, so that frame schedules nothing more.
      this.#beforeFlush?.(this.#end > this.#start || this.#wrote);
      this.#wrote = false;
    } finally {
      this.#scheduled = false;
    }
    this.flush();
  };

  /**
   * `beforeFlush` runs at the end of the turn just before the coalesced write, so an owner can
   * add a frame it deferred (the connection's cumulative ack rides along with the answers);
   * `carriesData` says whether anything else is queued for that write.
   */
  constructor(socket: WritableSocket, beforeFlush?: (carriesData: boolean) => void) {
    this.#socket = socket;
    this.#beforeFlush = beforeFlush;
  }

  /** Writes what is queued now, with the hook's frame (the ack); what comes later this turn goes at its end. */
  flushNow(): void {
    if (this.#end === this.#start) return;
    this.#beforeFlush?.(true);
    this.#wrote = false;
    this.flush();
  }

  /** Makes sure a flush (and the beforeFlush hook) runs at the end of this event-loop turn. */
  schedule(): void {
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flushTask);
    }
  }

  /** Bytes waiting to be written. */
  get pendingBytes(): number { return this.#end - this.#start; }

  /** True while the kernel refused bytes and a drain is awaited. */
  get blocked(): boolean { return this.#blocked; }

  /** Queues one frame whose body a codec encoded in place (FrameCodec.encodeRange). */
  pushEncoded(body: EncodedRange): void {
    this.pushFrame(body.bytes, body.start, body.end);
  }

  /** Queues one frame: u32be length, then the body, `bytes[start..end)` (by default all of `bytes`). */
  pushFrame(bytes: Uint8Array, start = 0, end = bytes.length): void {
    const length = end - start;
    this.#reserve(length + 4);
    const buf = this.#buf;
    let at = this.#end;
    buf[at] = length >>> 24;
    buf[at + 1] = (length >>> 16) & 0xff;
    buf[at + 2] = (length >>> 8) & 0xff;
    buf[at + 3] = length & 0xff;
    copyBytes.call(bytes, buf, at + 4, start, end);
    this.#end = at + 4 + length;
    if (this.#end - this.#start >= HIGH_WATER_BYTES) {
      this.flush();
      this.#wrote = true; // the end of the turn's hook still hears that data went out
    }
    this.schedule();
  }

  /** Writes as much as the kernel takes now. */
  flush(): void {
    if (this.#blocked || this.#end === this.#start) return;
    const written = this.#socket.write(this.#buf, this.#start, this.#end - this.#start);
    if (written > 0) this.#start += written;
    if (this.#start === this.#end) {
      this.#start = this.#end = 0;
      this.#notifyIdle();
    } else {
      this.#blocked = true;
    }
  }

  /** Called from the socket's drain handler: the kernel has room again. */
  onDrain(): void { this.#blocked = false; this.flush(); }

  /** Resolves once every queued byte has been handed to the kernel. */
  whenFlushed(): Promise<void> {
    if (this.#end === this.#start) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#idle.push(resolve);
    this.flush();
    return promise;
  }

  /** Drops everything (the socket is gone) and releases anyone waiting for a flush. */
  discard(): void {
    this.#start = this.#end = 0;
    this.#blocked = false;
    this.#notifyIdle();
  }

  #notifyIdle(): void {
    if (this.#idle.length === 0) return;
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }

  #reserve(bytes: number): void {
    if (this.#end + bytes <= this.#buf.length) return;
    const used = this.#end - this.#start;
    if (used + bytes <= this.#buf.length && this.#start > 0) {
      this.#buf.copyWithin(0, this.#start, this.#end);
    } else {
      let size = this.#buf.length * 2;
      while (size < used + bytes) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(this.#buf.subarray(this.#start, this.#end));
      this.#buf = grown;
    }
    this.#start = 0;
    this.#end = used;
  }
}

/**
 * When a connection's cumulative ack goes out: in the write queue's flush at the end of the
 * event-loop turn in which envelopes were handled, through its beforeFlush hook, riding on
 * whatever else that write carries (answers, the caller's next request) or alone. So the acks of
 * everything handled in one turn are one frame, in one write per turn, well inside the 5 ms
 * docs/protocol.md §4 allows. A peer whose hello offers a longer `ack_delay_ms` (the mesh's
 * control connections) gets a lone ack that late at most (`holdFor`): it rides on whatever this
 * side sends next (a heartbeat, a pong), and waits no longer once a quarter of `window` is owed.
 */
export class AckEmitter {
  readonly tracker = new AckTracker();
  /** How long a lone ack may wait for a frame to ride on; 0 (the protocol's default): the next turn. */
  #holdMs = 0;
  #promptAfter = 1;
  #writer!: WriteQueue;
  #writeAck: (seq: number) => void;
  #held: ReturnType<typeof setTimeout> | undefined;
  /** The connection is done: nothing more is held (a flush due this turn may still find it). */
  #stopped = false;
  #releaseHeld = () => {
    this.#held = undefined;
    this.flush();
    this.#writer.flush();
  };

  /** `writeAck` queues an ack frame; call `attach` with the write queue before traffic flows. */
  constructor(writeAck: (seq: number) => void) { this.#writeAck = writeAck; }

  /** Lets lone acks wait up to `ms` (the peer's `ack_delay_ms`) while under a quarter of `window` (this side's) is owed. */
  holdFor(ms: number, window: number): void {
    this.#holdMs = ms;
    this.#promptAfter = Math.max(1, window >> 2);
  }

  attach(writer: WriteQueue): void { this.#writer = writer; }

  /** Marks a received seq handled and makes sure an ack follows. */
  settle(seq: number): void {
    if (!this.tracker.settle(seq) || this.#stopped) return;
    if (this.#held === undefined) this.#writer.schedule();
    else if (this.tracker.owed >= this.#promptAfter) {
      // Held long enough by count: it goes with this turn's flush.
      clearTimeout(this.#held);
      this.#held = undefined;
      this.#writer.schedule();
    }
  }

  /**
   * Queues the ack frame if the ackable point moved (the write queue's beforeFlush hook, at the
   * end of the turn). A lone ack to a peer that lets acks wait (`holdFor`) is held instead.
   */
  flush = (carriesData = true): void => {
    if (!carriesData && this.#holdMs > 0 && this.tracker.owed < this.#promptAfter) {
      if (this.#held === undefined && this.tracker.ackDue && !this.#stopped) {
        this.#held = setTimeout(this.#releaseHeld, this.#holdMs);
        this.#held.unref?.();
      }
      return;
    }
    const seq = this.tracker.takeAck();
    if (seq > 0) this.#writeAck(seq);
    if (this.#held !== undefined) {
      // It rode on this write.
      clearTimeout(this.#held);
      this.#held = undefined;
    }
  };

  /** The connection is done: no held ack fires after it. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#held);
    this.#held = undefined;
  }
}

/** Default byte budget of a connection's unacknowledged frames, and again of what waits for credit. */
export const DEFAULT_MAX_UNACKED_BYTES = 16 * 1024 * 1024;

/**
 * Envelopes in the order they came, each with its frame bytes and when it was handed over: a
 * ring that doubles when full and starts small again once emptied after a burst, so steady
 * traffic allocates nothing (arrays pushed at the tail and reset when drained cost the send
 * path about as much as the rest of its window bookkeeping: bench/steady.ts events).
 */
class HeldEnvelopes {
  #envelopes: Array<Envelope | undefined> = new Array(HELD_INITIAL);
  #bytes = new Float64Array(HELD_INITIAL);
  #since = new Float64Array(HELD_INITIAL);
  #head = 0;
  length = 0;

  push(env: Envelope, bytes: number, since: number): void {
    if (this.length === this.#envelopes.length) this.#resize(this.length * 2);
    const i = (this.#head + this.length) & (this.#envelopes.length - 1);
    this.#envelopes[i] = env;
    this.#bytes[i] = bytes;
    this.#since[i] = since;
    this.length++;
  }

  /** Takes the oldest (there must be one). */
  shift(): Envelope {
    const env = this.#envelopes[this.#head]!;
    this.#envelopes[this.#head] = undefined;
    this.#head = (this.#head + 1) & (this.#envelopes.length - 1);
    this.length--;
    if (this.length === 0 && this.#envelopes.length > HELD_KEPT) this.#resize(HELD_INITIAL);
    return env;
  }

  /** The k-th oldest, and its bytes and time. */
  at(k: number): Envelope { return this.#envelopes[this.#slot(k)]!; }
  bytesAt(k: number): number { return this.#bytes[this.#slot(k)]!; }
  sinceAt(k: number): number { return this.#since[this.#slot(k)]!; }
  setSinceAt(k: number, since: number): void { this.#since[this.#slot(k)] = since; }
  #slot(k: number): number { return (this.#head + k) & (this.#envelopes.length - 1); }

  #resize(size: number): void {
    const envelopes = new Array<Envelope | undefined>(size);
    const bytes = new Float64Array(size);
    const since = new Float64Array(size);
    for (let k = 0; k < this.length; k++) {
      const i = this.#slot(k);
      envelopes[k] = this.#envelopes[i];
      bytes[k] = this.#bytes[i]!;
      since[k] = this.#since[i]!;
    }
    [this.#envelopes, this.#bytes, this.#since, this.#head] = [envelopes, bytes, since, 0];
  }
}

/** Slots a ring starts with (a power of two), and the most it keeps once emptied. */
const HELD_INITIAL = 64;
const HELD_KEPT = 8192;

/**
 * Sender side of credit flow control and redelivery bookkeeping: envelopes sent but not yet
 * acknowledged, in seq order, plus a backlog of envelopes waiting for credit. Never more than
 * `window` envelopes are unacknowledged. Each is kept with the time it was handed over, so
 * what is taken back for redelivery has its ttl reduced by the time it waited here (kept
 * beside the envelope, not on it: a property the encoder must skip, even under a symbol, made
 * msgpackr's walk of every envelope twice as slow).
 */
export class SendWindow {
  window: number;
  #unacked = new HeldEnvelopes();
  #inFlightBytes = 0;
  /** Seq of the oldest unacknowledged envelope. */
  #firstSeq = 1;
  #nextSeq = 1;
  #backlog = new HeldEnvelopes();
  #backlogBytesTotal = 0;
  /** When the envelope takeDeferred() returned last was parked: assign() it with this. */
  takenSince = 0;

  readonly maxBacklog: number;
  /** Unacknowledged frame bytes past which nothing more goes out (backpressure), and the budget of the backlog. */
  readonly maxBytes: number;
  #settles = new Map<Envelope, number>();

  constructor(window: number, maxBacklog = 100_000, maxBytes = DEFAULT_MAX_UNACKED_BYTES) {
    this.window = window;
    this.maxBacklog = maxBacklog;
    this.maxBytes = maxBytes;
  }

  /** Bytes of frames sent and not yet acknowledged. */
  get inFlightBytes(): number { return this.#inFlightBytes; }

  /** About how many bytes the envelopes waiting for credit hold. */
  get backlogBytes(): number { return this.#backlogBytesTotal; }

  /** Envelopes sent and not yet acknowledged. */
  get inFlight(): number { return this.#unacked.length; }

  /** Envelopes waiting for credit. */
  get backlogged(): number { return this.#backlog.length; }

  /** True when one more envelope may go on the wire now: within the peer's window and the byte budget. */
  get hasCredit(): boolean { return this.inFlight < this.window && this.#inFlightBytes < this.maxBytes; }

  /** The seq the next envelope sent will get. */
  get nextSeq(): number { return this.#nextSeq; }

  /** Records an envelope handed over at `since` as sent in a frame of `bytes` and returns its seq. */
  assign(env: Envelope, bytes: number, since: number): number {
    const seq = this.#nextSeq++;
    this.#unacked.push(env, bytes, since);
    this.#inFlightBytes += bytes;
    return seq;
  }

  /**
   * Parks an envelope until credit frees up; `settles` is a received seq to acknowledge once it
   * goes out (an answer parked for credit holds back the ack of its request). Throws code 6
   * when `maxBacklog` envelopes already wait.
   */
  defer(env: Envelope, settles?: number, since = Date.now()): void {
    if (this.backlogged >= this.maxBacklog) {
      throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "send backlog full: the peer is not acknowledging", {
        resource: "send_backlog",
        used: this.backlogged,
        limit: this.maxBacklog,
      });
    }
    if (this.#backlogBytesTotal >= this.maxBytes) {
      throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "send backlog full: its byte budget is spent while the peer is not acknowledging", {
        resource: "send_bytes",
        used: this.#backlogBytesTotal,
        limit: this.maxBytes,
      });
    }
    const bytes = approximateBytes(env.payload) + 200;
    this.#backlog.push(env, bytes, since);
    this.#backlogBytesTotal += bytes;
    if (settles !== undefined) this.#settles.set(env, settles);
  }

  /** The received seq a parked envelope settles once sent (see defer), consumed on read. */
  settlesOf(env: Envelope): number | undefined {
    if (this.#settles.size === 0) return undefined;
    const seq = this.#settles.get(env);
    if (seq !== undefined) this.#settles.delete(env);
    return seq;
  }

  /** Next parked envelope when there is credit for it (when it was parked: `takenSince`), else undefined. */
  takeDeferred(): Envelope | undefined {
    if (this.#backlog.length === 0 || !this.hasCredit) return undefined;
    this.#backlogBytesTotal -= this.#backlog.bytesAt(0);
    this.takenSince = this.#backlog.sinceAt(0);
    return this.#backlog.shift();
  }

  /** Applies a cumulative ack; returns how many envelopes it released. Acks for unsent seqs are ignored. */
  ack(seq: number, released?: (env: Envelope) => void): number {
    const upTo = Math.min(seq, this.#nextSeq - 1);
    const count = upTo - this.#firstSeq + 1;
    if (count <= 0) return 0;
    for (let i = 0; i < count; i++) {
      this.#inFlightBytes -= this.#unacked.bytesAt(0);
      const env = this.#unacked.shift();
      released?.(env);
    }
    this.#firstSeq += count;
    return count;
  }

  /**
   * Everything not acknowledged: sent first, then the backlog; for redelivery on another
   * connection. Each envelope's ttl is reduced by the time it waited here (docs/protocol.md §3,
   * TTL arithmetic), so the next holder counts on from what is left.
   */
  pending(now = Date.now()): Envelope[] {
    const taken: Envelope[] = [];
    for (const held of [this.#unacked, this.#backlog]) {
      for (let k = 0; k < held.length; k++) {
        const env = held.at(k);
        env.ttl = remainingTtl(env, held.sinceAt(k), now);
        held.setSinceAt(k, now); // asked twice, the wait is not counted twice
        taken.push(env);
      }
    }
    return taken;
  }
}

/**
 * Producers waiting on a connection's send window: for the backlog to fall to a low-water mark
 * (`whenWritable`) or for everything to be acknowledged (`whenAcknowledged`). Woken by acks,
 * never by polling, and all released when the connection closes.
 */
export class CreditWaiters {
  #window: SendWindow;
  #writable: Array<{ lowWater: number; lowWaterBytes: number; resolve: () => void }> = [];
  #acknowledged: Array<() => void> = [];
  #closed = false;

  constructor(window: SendWindow) { this.#window = window; }

  /** True while someone waits in whenAcknowledged. */
  get waitingForAll(): boolean { return this.#acknowledged.length > 0; }

  get allAcknowledged(): boolean { return this.#window.inFlight === 0 && this.#window.backlogged === 0; }

  /**
   * True while a producer may go on sending: at most a window's worth of envelopes, and half
   * the byte budget, wait for credit, far below the hard limits at which send() refuses (code 6).
   */
  get hasRoom(): boolean { return this.#closed || this.#below(this.#window.window, this.#window.maxBytes / 2); }

  /** Resolves once the backlog has fallen to half of the room (the hysteresis keeps producers from waking per ack). */
  whenRoom(): Promise<void> {
    return this.whenWritable(this.#window.window >> 1, this.#window.maxBytes / 4);
  }

  /** Resolves once at most `lowWater` envelopes (and `lowWaterBytes` bytes) wait for credit. */
  whenWritable(lowWater: number, lowWaterBytes = Infinity): Promise<void> {
    if (this.#closed || this.#below(lowWater, lowWaterBytes)) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#writable.push({ lowWater, lowWaterBytes, resolve });
    return promise;
  }

  #below(lowWater: number, lowWaterBytes: number): boolean {
    return this.#window.backlogged <= lowWater && this.#window.backlogBytes <= lowWaterBytes;
  }

  /** Resolves true when everything sent was acknowledged, false after `timeoutMs` or on close with some left. */
  async whenAcknowledged(timeoutMs: number): Promise<boolean> {
    if (!this.#closed && !this.allAcknowledged) {
      const { promise, resolve } = Promise.withResolvers<void>();
      this.#acknowledged.push(resolve);
      const timer = setTimeout(resolve, timeoutMs);
      await promise;
      clearTimeout(timer);
    }
    return this.allAcknowledged;
  }

  /** Credit came back: wake whoever it satisfies. */
  onAcked(): void {
    if (this.#writable.length > 0) {
      const waiting = this.#writable;
      this.#writable = [];
      for (const waiter of waiting) {
        if (this.#below(waiter.lowWater, waiter.lowWaterBytes)) waiter.resolve();
        else this.#writable.push(waiter);
      }
    }
    if (this.#acknowledged.length > 0 && this.allAcknowledged) this.#releaseAcknowledged();
  }

  /** The connection closed: nobody waits any longer. */
  close(): void {
    this.#closed = true;
    for (const waiter of this.#writable.splice(0)) waiter.resolve();
    this.#releaseAcknowledged();
  }

  #releaseAcknowledged(): void { for (const resolve of this.#acknowledged.splice(0)) resolve(); }
}
