import type { Envelope } from "../src/protocol/envelope.ts";

/** What a receiver remembers of a message it has seen. */
export interface DedupeEntry {
  state: "handling" | "done";
  /** ms since epoch when first seen. */
  at: number;
  /** The answer sent for a request, so a redelivered request gets it again instead of a second handling. */
  answer?: Envelope;
}

/** What a mesh node needs of its dedupe memory; durable actors back it with their store. */
export interface DedupeStore {
  lookup(id: string): DedupeEntry | undefined;
  begin(id: string, now?: number): void;
  complete(id: string, answer?: Envelope): void;
  forget(id: string): void;
  /** The requester acknowledged the answer: keep remembering the id, not the answer. */
  releaseAnswer(id: string): void;
}

/**
 * Receiver-side deduplication by message_id (PROTOCOL.md section 4): the last `capacity` ids
 * (default 100,000), each for up to `maxAgeMs` (default 10 minutes). A redelivered envelope
 * found here is acknowledged again and not handled twice; a request gets its stored answer.
 *
 * @example
 * const seen = new DedupeCache();
 * if (seen.lookup(env.message_id)) return reAck();
 * seen.begin(env.message_id); ...; seen.complete(env.message_id, answer);
 */
export class DedupeCache implements DedupeStore {
  readonly capacity: number;
  readonly maxAgeMs: number;
  // A Map iterates in insertion order: the oldest entry is always first.
  #entries = new Map<string, DedupeEntry>();

  constructor(options: { capacity?: number; maxAgeMs?: number } = {}) {
    this.capacity = options.capacity ?? 100_000;
    this.maxAgeMs = options.maxAgeMs ?? 600_000;
  }

  get size(): number {
    return this.#entries.size;
  }

  lookup(id: string): DedupeEntry | undefined {
    return this.#entries.get(id);
  }

  /** Records that handling of `id` started. */
  begin(id: string, now = Date.now()): void {
    this.#entries.set(id, { state: "handling", at: now });
    this.#evict(now);
  }

  /** Records that `id` was handled, with the answer sent for it (requests). */
  complete(id: string, answer?: Envelope): void {
    const entry = this.#entries.get(id);
    if (entry) {
      entry.state = "done";
      if (answer) entry.answer = answer;
    } else {
      this.#entries.set(id, { state: "done", at: Date.now(), ...(answer && { answer }) });
    }
  }

  releaseAnswer(id: string): void {
    const entry = this.#entries.get(id);
    if (entry) delete entry.answer;
  }

  /** Forgets `id`: its handling was abandoned before it took effect (a redelivery must handle it). */
  forget(id: string): void {
    this.#entries.delete(id);
  }

  #evict(now: number): void {
    for (const [id, entry] of this.#entries) {
      if (this.#entries.size <= this.capacity && now - entry.at <= this.maxAgeMs) break;
      this.#entries.delete(id);
    }
  }
}
