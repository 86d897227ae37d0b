import type { Envelope } from "../src/protocol/envelope.ts";
import type { HermesError } from "../src/protocol/hermes-error.ts";

/** An envelope that could not be delivered, kept for inspection. */
export interface DeadLetter {
  envelope: Envelope;
  destination: string;
  error: ReturnType<HermesError["toPayload"]>;
  at: number;
}

/** The envelopes a node gave up on (docs/protocol.md §4), the newest `capacity` kept. */
export class DeadLetters {
  readonly capacity: number;
  #items: DeadLetter[] = [];

  constructor(capacity = 1000) {
    this.capacity = capacity;
  }

  get size(): number {
    return this.#items.length;
  }

  add(envelope: Envelope, destination: string, error: HermesError): void {
    this.#items.push({ envelope, destination, error: error.toPayload(), at: Date.now() });
    if (this.#items.length > this.capacity) this.#items.shift();
  }

  /** Oldest first. */
  list(): readonly DeadLetter[] {
    return this.#items;
  }
}
