/**
 * An actor's mailbox: ten FIFO lanes, one per priority (0..9), drained highest first, so an
 * urgent message overtakes a backlog of routine ones but equal priorities keep their order.
 * Its size is bounded from outside: every envelope in it is unacknowledged, so the senders'
 * credit windows cap how many can wait.
 *
 * @example
 * const box = new Mailbox<string>();
 * box.push("routine", 5); box.push("urgent", 9);
 * box.shift(); // "urgent"
 */
export class Mailbox<T> {
  #lanes: T[][] = Array.from({ length: 10 }, () => []);
  #heads = new Array<number>(10).fill(0);
  #size = 0;
  /** Highest lane that may be non-empty, so shift() does not scan empty lanes. */
  #top = -1;

  get size(): number {
    return this.#size;
  }

  push(item: T, priority = 5): void {
    const lane = priority >= 0 && priority <= 9 ? priority | 0 : 5;
    this.#lanes[lane]!.push(item);
    this.#size++;
    if (lane > this.#top) this.#top = lane;
  }

  /** The next item: highest priority, oldest first; undefined when empty. */
  shift(): T | undefined {
    while (this.#top >= 0) {
      const lane = this.#lanes[this.#top]!;
      const head = this.#heads[this.#top]!;
      if (head < lane.length) {
        const item = lane[head]!;
        lane[head] = undefined as T;
        if (head + 1 === lane.length) {
          lane.length = 0;
          this.#heads[this.#top] = 0;
        } else {
          this.#heads[this.#top] = head + 1;
        }
        this.#size--;
        return item;
      }
      this.#top--;
    }
    return undefined;
  }
}
