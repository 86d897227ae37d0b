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
  #entries = new Map<string, DedupeEntry>();
  /**
   * Ids in the order they were first seen, as a ring: eviction takes from its head. (Iterating
   * the Map from its start instead cost 44% of a busy receiver's CPU: a Map keeps the slots of
   * deleted entries until it rehashes, and every iteration from the start walks over them.)
   */
  #order = new SeenOrder();
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
    const entry = newEntry("handling", now);
    this.#entries.set(id, entry);
    this.#order.push(id, entry);
    this.#evict(now);
  }

  /** Records that `id` was handled, with the answer sent for it (requests). */
  complete(id: string, answer?: Envelope): void {
    let entry = this.#entries.get(id);
    if (entry) entry.state = "done";
    else {
      this.#entries.set(id, (entry = newEntry("done", Date.now())));
      this.#order.push(id, entry);
    }
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
    // (Checked before iterating: starting an iteration of a Map with deletions behind it is not free.)
    if (this.#answerBytesTotal + bytes > this.answerBudgetBytes) for (const [oldId] of this.#answerBytes) {
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
    // Forgotten ids leave stale slots behind: rebuilt from the Map (in insertion order) if they pile up.
    if (this.#order.length > 2 * this.capacity + 1024) {
      this.#order = new SeenOrder();
      for (const [id, entry] of this.#entries) this.#order.push(id, entry);
    }
    for (;;) {
      const oldest = this.#order.oldest();
      if (oldest === undefined) return;
      const [id, entry] = oldest;
      // An id forgotten (or forgotten and seen again) since it was queued: its slot is stale.
      if (this.#entries.get(id) !== entry) {
        this.#order.shift();
        continue;
      }
      if (this.#entries.size <= this.capacity && now - entry.at <= this.maxAgeMs) return;
      this.#order.shift();
      this.#dropAnswer(id, entry);
      this.#entries.delete(id);
    }
  }
}

/** A first-in first-out ring of (id, entry) pairs that grows by doubling; no per-item allocation. */
class SeenOrder {
  #ids: (string | undefined)[] = new Array(1024);
  #entries: (DedupeEntry | undefined)[] = new Array(1024);
  #head = 0;
  #length = 0;
  /** Reused for `oldest()`'s answer: read it before the next call. */
  #pair: [string, DedupeEntry] = ["", undefined as unknown as DedupeEntry];

  get length(): number {
    return this.#length;
  }

  push(id: string, entry: DedupeEntry): void {
    if (this.#length === this.#ids.length) this.#grow();
    const at = (this.#head + this.#length) % this.#ids.length;
    this.#ids[at] = id;
    this.#entries[at] = entry;
    this.#length++;
  }

  oldest(): [string, DedupeEntry] | undefined {
    if (this.#length === 0) return undefined;
    this.#pair[0] = this.#ids[this.#head]!;
    this.#pair[1] = this.#entries[this.#head]!;
    return this.#pair;
  }

  shift(): void {
    this.#ids[this.#head] = undefined;
    this.#entries[this.#head] = undefined;
    this.#head = (this.#head + 1) % this.#ids.length;
    this.#length--;
  }

  #grow(): void {
    const size = this.#ids.length;
    const ids = new Array<string | undefined>(size * 2);
    const entries = new Array<DedupeEntry | undefined>(size * 2);
    for (let i = 0; i < this.#length; i++) {
      ids[i] = this.#ids[(this.#head + i) % size];
      entries[i] = this.#entries[(this.#head + i) % size];
    }
    this.#ids = ids;
    this.#entries = entries;
    this.#head = 0;
  }
}

/** Every entry with the same fields from the start, so they all share one hidden class. */
function newEntry(state: DedupeEntry["state"], at: number): DedupeEntry {
  return { state, at, answer: undefined, answerSummary: undefined };
}

function summaryOf(answer: Envelope, bytes: number): AnswerSummary {
  return { message_id: answer.message_id, message_type: answer.message_type, bytes };
}
