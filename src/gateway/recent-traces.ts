/** One request the gateway answered, for the dashboard's "recent traces". */
export interface TraceSummary {
  trace_id: string;
  at: number;
  route: string;
  target: string;
  duration_ms: number;
  status: "ok" | "error";
  error_code?: number;
}

/**
 * The last `capacity` requests through the gateway, newest first: a ring written in place (an
 * array shifted by one at every request cost a loaded gateway more than its span record).
 *
 * @example
 * const recent = new RecentTraces(2);
 * recent.add(a); recent.add(b); recent.add(c);
 * recent.list(); // [c, b]
 */
export class RecentTraces {
  #items: TraceSummary[] = [];
  /** Where the next item goes once the ring is full. */
  #next = 0;
  readonly capacity: number;

  constructor(capacity = 50) {
    this.capacity = capacity;
  }

  add(item: TraceSummary): void {
    if (this.capacity <= 0) return;
    if (this.#items.length < this.capacity) this.#items.push(item);
    else this.#items[this.#next] = item;
    this.#next = (this.#next + 1) % this.capacity;
  }

  list(): TraceSummary[] {
    const newestFirst: TraceSummary[] = [];
    const items = this.#items;
    for (let i = 1; i <= items.length; i++) newestFirst.push(items[(this.#next - i + items.length * 2) % items.length]!);
    return newestFirst;
  }
}
