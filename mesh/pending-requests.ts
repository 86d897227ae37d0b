import type { Envelope, Payload } from "../src/protocol/envelope.ts";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";
import { MessageType } from "../src/protocol/message-types.ts";

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
  resolve: (response: Envelope) => void;
  reject: (error: HermesError) => void;
  onProgress?: WaitOptions["onProgress"];
  timer: ReturnType<typeof setTimeout>;
  onAbort?: () => void;
  signal?: AbortSignal;
}

/**
 * Requests sent and waiting for their answer, keyed by message_id. Answers may arrive on any
 * connection (the first one broke, the request was redelivered on another): what matches is
 * the correlation id, not the connection.
 */
export class PendingRequests {
  #pending = new Map<string, Pending>();
  /** Called when a request is given up (deadline, abort) so the peer can be told to cancel. */
  #onGiveUp: (request: Envelope, error: HermesError) => void;

  constructor(onGiveUp: (request: Envelope, error: HermesError) => void = () => {}) {
    this.#onGiveUp = onGiveUp;
  }

  /** Requests waiting. */
  get size(): number {
    return this.#pending.size;
  }

  /** Starts waiting for the answer to `request`; resolves with the response envelope or rejects with the coded error. */
  wait(request: Envelope, options: WaitOptions): Promise<Envelope> {
    const { promise, resolve, reject } = Promise.withResolvers<Envelope>();
    const id = request.message_id;
    const timeoutMs = options.timeoutMs;
    const pending: Pending = {
      request,
      resolve,
      reject,
      onProgress: options.onProgress,
      timer: setTimeout(() => this.giveUp(id, new HermesError(ErrorCode.TASK_TIMEOUT, `no answer within ${timeoutMs} ms`, { timeout_ms: timeoutMs })), timeoutMs),
    };
    if (options.signal) {
      pending.signal = options.signal;
      pending.onAbort = () => this.giveUp(id, new HermesError(ErrorCode.TASK_TIMEOUT, "request cancelled", { timeout_ms: timeoutMs }));
      options.signal.addEventListener("abort", pending.onAbort, { once: true });
    }
    this.#pending.set(id, pending);
    return promise;
  }

  /** Applies a response, error or progress envelope; returns false when it answers nothing waiting here. */
  handle(env: Envelope): boolean {
    const id = env.correlation_id!;
    switch (env.message_type) {
      case MessageType.RESPONSE: {
        const pending = this.#take(id);
        pending?.resolve(env);
        return pending !== undefined;
      }
      case MessageType.ERROR: {
        const pending = this.#take(id);
        pending?.reject(HermesError.fromWire(env));
        return pending !== undefined;
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
  giveUp(id: string, error: HermesError): void {
    const pending = this.#take(id);
    if (!pending) return;
    this.#onGiveUp(pending.request, error);
    pending.reject(error);
  }

  /** Rejects one waiting request without telling the peer (it never got it, or is gone). */
  fail(id: string, error: HermesError): void {
    this.#take(id)?.reject(error);
  }

  /** True while `id` waits for an answer. */
  has(id: string): boolean {
    return this.#pending.has(id);
  }

  /** Rejects every waiting request. */
  failAll(error: HermesError): void {
    for (const id of [...this.#pending.keys()]) this.fail(id, error);
  }

  #take(id: string): Pending | undefined {
    const pending = this.#pending.get(id);
    if (!pending) return undefined;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    if (pending.onAbort) pending.signal!.removeEventListener("abort", pending.onAbort);
    return pending;
  }
}
