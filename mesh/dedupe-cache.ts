import type { Envelope } from "./envelope.ts";
import { approximateBytes } from "./frames.ts";

/** What a receiver remembers of a message it has seen. */
export interface DedupeEntry {
  state: "handling" | "done";
  /** ms since epoch when first seen. */
  at: number;
  /** The answer sent for a request, so a redelivered request gets it again instead of a second handling. */
  answer?: Envelope | undefined;
  /**
   * What is left of an answer whose body was not kept (the answer budget was spent): enough
   * for a redelivery to be told it was handled, never handled twice.
   */
  answerSummary?: AnswerSummary | undefined;
}

/** An answer remembered without its body. */
export interface AnswerSummary {
  message_id: string;
  message_type: string;
  /** About how many bytes the body had. */
  bytes: number;
}

/** Default byte budget of the answers a receiver keeps for redeliveries. */
export const DEFAULT_ANSWER_BUDGET_BYTES = 64 * 1024 * 1024;

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
 * Receiver-side deduplication by message_id (docs/protocol.md §4): the last `capacity` ids
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
  /** Bytes of answer bodies kept at most; past it the oldest bodies give way to summaries. */
  readonly answerBudgetBytes: number;
  // A Map iterates in insertion order: the oldest entry is always first.
  #entries = new Map<string, DedupeEntry>();
  /** Ids whose answer body is kept, oldest first, with its size. */
  #answerBytes = new Map<string, number>();
  #answerBytesTotal = 0;

  constructor(options: { capacity?: number; maxAgeMs?: number; answerBudgetBytes?: number } = {}) {
    this.capacity = options.capacity ?? 100_000;
    this.maxAgeMs = options.maxAgeMs ?? 600_000;
    this.answerBudgetBytes = options.answerBudgetBytes ?? DEFAULT_ANSWER_BUDGET_BYTES;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Bytes of answer bodies kept now (about). */
  get answerBytes(): number {
    return this.#answerBytesTotal;
  }

  lookup(id: string): DedupeEntry | undefined {
    return this.#entries.get(id);
  }

  /** Records that handling of `id` started. */
  begin(id: string, now = Date.now()): void {
    this.#entries.set(id, newEntry("handling", now));
    this.#evict(now);
  }

  /** Records that `id` was handled, with the answer sent for it (requests). */
  complete(id: string, answer?: Envelope): void {
    let entry = this.#entries.get(id);
    if (entry) entry.state = "done";
    else this.#entries.set(id, (entry = newEntry("done", Date.now())));
    if (answer) this.#keepAnswer(id, entry, answer);
  }

  releaseAnswer(id: string): void {
    const entry = this.#entries.get(id);
    if (entry) this.#dropAnswer(id, entry);
  }

  /** Forgets `id`: its handling was abandoned before it took effect (a redelivery must handle it). */
  forget(id: string): void {
    const entry = this.#entries.get(id);
    if (!entry) return;
    this.#dropAnswer(id, entry);
    this.#entries.delete(id);
  }

  #keepAnswer(id: string, entry: DedupeEntry, answer: Envelope): void {
    this.#dropAnswer(id, entry);
    const bytes = approximateBytes(answer.payload) + 200;
    if (bytes > this.answerBudgetBytes) {
      entry.answerSummary = summaryOf(answer, bytes);
      return;
    }
    // Make room by giving up the oldest bodies: a redelivery, if one comes, comes soon after a crash.
    for (const [oldId] of this.#answerBytes) {
      if (this.#answerBytesTotal + bytes <= this.answerBudgetBytes) break;
      const old = this.#entries.get(oldId);
      if (old?.answer) old.answerSummary = summaryOf(old.answer, this.#answerBytes.get(oldId)!);
      if (old) this.#dropAnswer(oldId, old);
      else this.#untrack(oldId);
    }
    entry.answer = answer;
    entry.answerSummary = undefined;
    this.#answerBytes.set(id, bytes);
    this.#answerBytesTotal += bytes;
  }

  #dropAnswer(id: string, entry: DedupeEntry): void {
    // Assigned, not deleted: `delete` turns the entry into a slow dictionary object.
    if (entry.answer === undefined) return;
    entry.answer = undefined;
    this.#untrack(id);
  }

  #untrack(id: string): void {
    const bytes = this.#answerBytes.get(id);
    if (bytes === undefined) return;
    this.#answerBytes.delete(id);
    this.#answerBytesTotal -= bytes;
  }

  #evict(now: number): void {
    for (const [id, entry] of this.#entries) {
      if (this.#entries.size <= this.capacity && now - entry.at <= this.maxAgeMs) break;
      this.#dropAnswer(id, entry);
      this.#entries.delete(id);
    }
  }
}

/** Every entry with the same fields from the start, so they all share one hidden class. */
function newEntry(state: DedupeEntry["state"], at: number): DedupeEntry {
  return { state, at, answer: undefined, answerSummary: undefined };
}

function summaryOf(answer: Envelope, bytes: number): AnswerSummary {
  return { message_id: answer.message_id, message_type: answer.message_type, bytes };
}
