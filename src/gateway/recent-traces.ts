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

/** The last `capacity` requests through the gateway, newest first. */
export class RecentTraces {
  #items: TraceSummary[] = [];
  readonly capacity: number;

  constructor(capacity = 50) {
    this.capacity = capacity;
  }

  add(item: TraceSummary): void {
    this.#items.unshift(item);
    if (this.#items.length > this.capacity) this.#items.length = this.capacity;
  }

  list(): TraceSummary[] {
    return [...this.#items];
  }
}
