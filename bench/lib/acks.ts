/**
 * The sender's side of a stream peer's flow control: the receiver reports the cumulative count
 * of messages it has taken (once per read or tick), the sender keeps at most a window of
 * messages beyond that count and ends a burst when the count reaches what it sent. A peer whose
 * transport has no back-pressure of its own (IPC channels, NATS publish, Redis XADD) would
 * otherwise buffer a whole burst in memory.
 */
export class CumulativeAcks {
  #acked = 0;
  #waiter: { target: number; resolve: () => void; reject: (error: Error) => void } | undefined;
  #failure: Error | undefined;

  /** The receiver's latest cumulative count. */
  get acked(): number {
    return this.#acked;
  }

  /** A cumulative count from the receiver (an older, smaller one is ignored). */
  update(count: number): void {
    if (count <= this.#acked) return;
    this.#acked = count;
    const waiter = this.#waiter;
    if (waiter && count >= waiter.target) {
      this.#waiter = undefined;
      waiter.resolve();
    }
  }

  /** The receiver is gone: the pending wait and every later one reject with `error`. */
  fail(error: Error): void {
    this.#failure ??= error;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.reject(error);
  }

  /**
   * Resolves once the count reaches `target`; rejects when the receiver failed or nothing
   * arrived for `stallMs` (the count must move, a slow burst is fine).
   */
  async until(target: number, stallMs = 30_000): Promise<void> {
    while (this.#acked < target) {
      if (this.#failure) throw this.#failure;
      const before = this.#acked;
      const { promise, resolve, reject } = Promise.withResolvers<void>();
      this.#waiter = { target, resolve, reject };
      const timer = setTimeout(() => {
        if (this.#acked === before) reject(new Error(`receiver acknowledged ${this.#acked} of ${target} and then nothing for ${stallMs} ms`));
        else resolve(); // progress without reaching the target: wait again
      }, stallMs);
      try {
        await promise;
      } finally {
        clearTimeout(timer);
        this.#waiter = undefined;
      }
    }
  }

  /**
   * Sends `n` messages through `sendSome(max)` (which sends at most `max` and returns how many
   * it sent), keeping at most `window` unacknowledged, and resolves once all are acknowledged.
   *
   * @example
   * await acks.burst(n, 16_384, (max) => { const k = Math.min(max, 256); channel.send(batchOf(k)); return k; });
   */
  async burst(n: number, window: number, sendSome: (max: number) => number): Promise<void> {
    const target = this.#acked + n;
    let sent = this.#acked;
    while (sent < target) {
      while (sent < target && sent - this.#acked < window) sent += sendSome(Math.min(target - sent, window - (sent - this.#acked)));
      // Refill once half the window is free: one wake-up per half window, not per ack.
      if (sent < target) await this.until(sent - (window >> 1));
    }
    await this.until(target);
  }
}
