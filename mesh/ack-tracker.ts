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

  /** Highest contiguous handled seq. */
  get handledThrough(): number {
    return this.#contiguous;
  }
}
