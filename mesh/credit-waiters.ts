import type { SendWindow } from "./send-window.ts";

/**
 * Producers waiting on a connection's send window: for the backlog to fall to a low-water mark
 * (`whenWritable`) or for everything to be acknowledged (`whenAcknowledged`). Woken by acks,
 * never by polling, and all released when the connection closes.
 */
export class CreditWaiters {
  #window: SendWindow;
  #writable: Array<{ lowWater: number; resolve: () => void }> = [];
  #acknowledged: Array<() => void> = [];
  #closed = false;

  constructor(window: SendWindow) {
    this.#window = window;
  }

  get allAcknowledged(): boolean {
    return this.#window.inFlight === 0 && this.#window.backlogged === 0;
  }

  whenWritable(lowWater: number): Promise<void> {
    if (this.#closed || this.#window.backlogged <= lowWater) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#writable.push({ lowWater, resolve });
    return promise;
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
      const backlog = this.#window.backlogged;
      const waiting = this.#writable;
      this.#writable = [];
      for (const waiter of waiting) {
        if (backlog <= waiter.lowWater) waiter.resolve();
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

  #releaseAcknowledged(): void {
    for (const resolve of this.#acknowledged.splice(0)) resolve();
  }
}
