import type { Envelope } from "../src/protocol/envelope.ts";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";
import { approximateBytes } from "../src/protocol/payload-limits.ts";

/** Default byte budget of a connection's unacknowledged frames, and again of what waits for credit. */
export const DEFAULT_MAX_UNACKED_BYTES = 16 * 1024 * 1024;

/**
 * Sender side of credit flow control and redelivery bookkeeping: envelopes sent but not yet
 * acknowledged, in seq order, plus a backlog of envelopes waiting for credit. Never more than
 * `window` envelopes are unacknowledged.
 */
export class SendWindow {
  window: number;
  #unacked: Envelope[] = [];
  /** Frame bytes of each unacknowledged envelope, in step with #unacked. */
  #unackedBytes: number[] = [];
  #inFlightBytes = 0;
  #head = 0;
  /** Seq of #unacked[#head]. */
  #firstSeq = 1;
  #nextSeq = 1;
  #backlog: Envelope[] = [];
  #backlogBytes: number[] = [];
  #backlogBytesTotal = 0;
  #backlogHead = 0;

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
  get inFlightBytes(): number {
    return this.#inFlightBytes;
  }

  /** About how many bytes the envelopes waiting for credit hold. */
  get backlogBytes(): number {
    return this.#backlogBytesTotal;
  }

  /** Envelopes sent and not yet acknowledged. */
  get inFlight(): number {
    return this.#unacked.length - this.#head;
  }

  /** Envelopes waiting for credit. */
  get backlogged(): number {
    return this.#backlog.length - this.#backlogHead;
  }

  /** True when one more envelope may go on the wire now: within the peer's window and the byte budget. */
  get hasCredit(): boolean {
    return this.inFlight < this.window && this.#inFlightBytes < this.maxBytes;
  }

  /** The seq the next envelope sent will get. */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  /** Records an envelope as sent in a frame of `bytes` and returns its seq. */
  assign(env: Envelope, bytes: number): number {
    const seq = this.#nextSeq++;
    this.#unacked.push(env);
    this.#unackedBytes.push(bytes);
    this.#inFlightBytes += bytes;
    return seq;
  }

  /**
   * Parks an envelope until credit frees up; `settles` is a received seq to acknowledge once it
   * goes out (an answer parked for credit holds back the ack of its request). Throws code 6
   * when `maxBacklog` envelopes already wait.
   */
  defer(env: Envelope, settles?: number): void {
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
    this.#backlog.push(env);
    this.#backlogBytes.push(bytes);
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

  /** Next parked envelope when there is credit for it, else undefined. */
  takeDeferred(): Envelope | undefined {
    if (this.#backlogHead >= this.#backlog.length || !this.hasCredit) return undefined;
    const env = this.#backlog[this.#backlogHead]!;
    this.#backlogBytesTotal -= this.#backlogBytes[this.#backlogHead]!;
    this.#backlog[this.#backlogHead++] = undefined as unknown as Envelope;
    if (this.#backlogHead === this.#backlog.length) {
      this.#backlog = [];
      this.#backlogBytes = [];
      this.#backlogHead = 0;
    }
    return env;
  }

  /** Applies a cumulative ack; returns how many envelopes it released. Acks for unsent seqs are ignored. */
  ack(seq: number, released?: (env: Envelope) => void): number {
    const upTo = Math.min(seq, this.#nextSeq - 1);
    const count = upTo - this.#firstSeq + 1;
    if (count <= 0) return 0;
    for (let i = this.#head; i < this.#head + count; i++) {
      this.#inFlightBytes -= this.#unackedBytes[i]!;
      released?.(this.#unacked[i]!);
    }
    this.#head += count;
    this.#firstSeq += count;
    if (this.#head === this.#unacked.length) {
      this.#unacked = [];
      this.#unackedBytes = [];
      this.#head = 0;
    } else if (this.#head > 4096 && this.#head * 2 > this.#unacked.length) {
      this.#unacked = this.#unacked.slice(this.#head);
      this.#unackedBytes = this.#unackedBytes.slice(this.#head);
      this.#head = 0;
    }
    return count;
  }

  /** Everything not acknowledged: sent first, then the backlog; for redelivery on another connection. */
  pending(): Envelope[] {
    return [...this.#unacked.slice(this.#head), ...this.#backlog.slice(this.#backlogHead)];
  }
}
