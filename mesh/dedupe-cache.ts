import type { Envelope } from "./envelope.ts";
import { approximateBytes } from "./frames.ts";
import { readUlidKey, ULID_KEY_WORDS, ulidKeyTime } from "./ids.ts";

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
  /** The requester acknowledged the answer (`answer`, when the caller has it): keep remembering the id, not the answer. */
  releaseAnswer(id: string, answer?: Envelope): void;
}

/**
 * Receiver-side deduplication by message_id (docs/protocol.md §4): the last `capacity` ids
 * (default 100,000), each for up to `maxAgeMs` (default 10 minutes). A redelivered envelope
 * found here is acknowledged again and not handled twice; a request gets its stored answer.
 *
 * Why typed arrays: kept as strings in a Map (with an object each), 100,000 ids were a live set
 * the collector walked on every collection (docs/benchmarks.md). A ULID is kept as its 130 bits
 * in numbers instead (SeenSlots). Other ids (a ULID in lower case, which an envelope may carry;
 * names in tests and other stores; a ULID stamped far ahead of its arrival) go through a Map to
 * the same slots.
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
  #slots = new SeenSlots(INITIAL_SLOTS);
  /** Slots of ids the chunks do not index (not ULIDs, or stamped far ahead: AHEAD_MS), and the other way round. */
  #named = new Map<string, number>();
  #nameOf = new Map<number, string>();
  /**
   * Answer bodies kept, by slot (their sizes are in the slots). An array the ring's size, not a
   * Map: setting and deleting a Map entry per request was a tenth of a busy actor's profile.
   */
  #answers: (Envelope | undefined)[] = new Array(INITIAL_SLOTS);
  #answerCount = 0;
  /** The order the bodies were kept in, oldest first, for the budget to give up the oldest. */
  #keptOrder = new KeptOrder((slot, keep) => this.#answers[slot] !== undefined && this.#slots.answerKeep[slot] === keep);
  #keeps = 0;
  #summaries = new Map<number, AnswerSummary>();
  #answerBytesTotal = 0;
  /** The key of the id read last: a message is looked up, begun and completed by the same id. */
  #key = new Int32Array(ULID_KEY_WORDS);
  #keyOf: string | undefined;
  #keyIsUlid = false;
  /**
   * The slot of that id (-1: not remembered), while known: a message is looked up, begun and
   * completed in a row, and each probe of the index is a likely cache miss in a table of
   * 100,000 ids. Forgotten whenever a slot is emptied or renumbered.
   */
  #slotOfKey = -1;
  #slotKnown = false;

  constructor(options: { capacity?: number; maxAgeMs?: number; answerBudgetBytes?: number } = {}) {
    this.capacity = options.capacity ?? 100_000;
    this.maxAgeMs = options.maxAgeMs ?? 600_000;
    this.answerBudgetBytes = options.answerBudgetBytes ?? DEFAULT_ANSWER_BUDGET_BYTES;
  }

  get size(): number { return this.#slots.live; }

  /** Bytes of answer bodies kept now (about). */
  get answerBytes(): number { return this.#answerBytesTotal; }

  lookup(id: string): DedupeEntry | undefined {
    const slot = this.#find(id);
    if (slot < 0) return undefined;
    return {
      state: this.#slots.state[slot] === HANDLING ? "handling" : "done",
      at: this.#slots.at[slot]!,
      answer: this.#answers[slot],
      answerSummary: this.#summaries.get(slot),
    };
  }

  /** Records that handling of `id` started. */
  begin(id: string, now = Date.now()): void {
    const old = this.#find(id);
    // Seen again after a forget (or twice): it counts from its new place.
    if (old >= 0) this.#remove(old);
    this.#add(id, HANDLING, now);
    this.#evict(now);
  }

  /** Records that `id` was handled, with the answer sent for it (requests). */
  complete(id: string, answer?: Envelope): void {
    let slot = this.#find(id);
    const now = slot < 0 ? Date.now() : 0;
    if (slot >= 0) this.#slots.state[slot] = DONE;
    else slot = this.#add(id, DONE, now);
    if (answer) this.#keepAnswer(slot, answer);
    // Remembered anew (evicted while it ran, or never begun here): the memory keeps its bounds.
    if (now > 0) this.#evict(now);
  }

  releaseAnswer(id: string, answer?: Envelope): void {
    // Answers are acknowledged by correlation_id, which need not be an id of ours at all.
    if (this.#answerCount === 0) return;
    // They are acknowledged in the order they went, which is the order they were kept: the
    // oldest one kept, as a rule, found without reading the id and probing the index.
    if (answer !== undefined) {
      const oldest = this.#keptOrder.peek();
      if (oldest >= 0 && this.#answers[oldest] === answer) {
        this.#keptOrder.shift();
        this.#dropAnswer(oldest);
        return;
      }
    }
    const slot = this.#find(id);
    if (slot >= 0) this.#dropAnswer(slot);
  }

  /** Forgets `id`: its handling was abandoned before it took effect (a redelivery must handle it). */
  forget(id: string): void {
    const slot = this.#find(id);
    if (slot >= 0) this.#remove(slot);
  }

  /** True when `id` is a ULID, read into #key. */
  #read(id: string): boolean {
    if (id !== this.#keyOf) {
      this.#keyIsUlid = readUlidKey(id, this.#key);
      this.#keyOf = id;
      this.#slotKnown = false;
    }
    return this.#keyIsUlid;
  }

  /** The slot remembering `id`, or -1. */
  #find(id: string): number {
    const ulid = this.#read(id);
    if (this.#slotKnown) return this.#slotOfKey;
    // The Map first while it holds anything: ids the chunks do not index (see #add) are there.
    const named = this.#named.size > 0 ? (this.#named.get(id) ?? -1) : -1;
    this.#slotOfKey = named < 0 && ulid ? this.#slots.find(this.#key) : named;
    this.#slotKnown = true;
    return this.#slotOfKey;
  }

  #add(id: string, state: number, at: number): number {
    if (this.#slots.full) this.#reshape();
    let slot: number;
    if (this.#read(id) && ulidKeyTime(this.#key) <= at + AHEAD_MS) slot = this.#slots.add(this.#key, 0, state, at, true);
    else {
      slot = this.#slots.add(this.#key, 0, state, at, false);
      this.#named.set(id, slot);
      this.#nameOf.set(slot, id);
    }
    this.#slotOfKey = slot;
    this.#slotKnown = true;
    return slot;
  }

  #remove(slot: number): void {
    if (slot === this.#slotOfKey) this.#slotKnown = false;
    // Most receivers keep no answers (events) and see only ULIDs: nothing more to look at.
    if (this.#answerCount > 0) this.#dropAnswer(slot);
    if (this.#summaries.size > 0) this.#summaries.delete(slot);
    const name = this.#nameOf.size > 0 ? this.#nameOf.get(slot) : undefined;
    if (name !== undefined) {
      this.#nameOf.delete(slot);
      this.#named.delete(name);
    }
    this.#slots.remove(slot);
  }

  #evict(now: number): void {
    const slots = this.#slots;
    for (;;) {
      const oldest = slots.oldest();
      if (oldest < 0) return;
      if (slots.state[oldest] !== EMPTY) {
        if (slots.live <= this.capacity && now - slots.at[oldest]! <= this.maxAgeMs) return;
        this.#remove(oldest);
      }
      slots.shift();
    }
  }

  /** The ring is full: the same ids in a ring with room (compacted, or twice the size), slots renumbered. */
  #reshape(): void {
    const old = this.#slots;
    const size = old.live * 2 < old.size ? old.size : old.size * 2;
    const { slots, moved } = old.copyLive(size);
    this.#slots = slots;
    this.#slotKnown = false;
    const renumber = <T>(map: Map<number, T>): Map<number, T> => {
      const next = new Map<number, T>();
      for (const [slot, value] of map) next.set(moved[slot]!, value);
      return next;
    };
    const answers: (Envelope | undefined)[] = new Array(size);
    if (this.#answerCount > 0) for (let slot = 0; slot < old.size; slot++) if (this.#answers[slot] !== undefined) answers[moved[slot]!] = this.#answers[slot];
    this.#answers = answers;
    this.#keptOrder.renumber(moved);
    this.#summaries = renumber(this.#summaries);
    this.#nameOf = renumber(this.#nameOf);
    for (const [slot, name] of this.#nameOf) this.#named.set(name, slot);
  }

  #keepAnswer(slot: number, answer: Envelope): void {
    this.#dropAnswer(slot);
    const bytes = approximateBytes(answer.payload) + 200;
    if (bytes > this.answerBudgetBytes) {
      this.#summaries.set(slot, summaryOf(answer, bytes));
      return;
    }
    // Make room by giving up the oldest bodies: a redelivery, if one comes, comes soon after a crash.
    if (this.#answerBytesTotal + bytes > this.answerBudgetBytes) this.#summarizeOldest(this.answerBudgetBytes - bytes);
    this.#answers[slot] = answer;
    this.#answerCount++;
    this.#slots.answerBytes[slot] = bytes;
    this.#slots.answerKeep[slot] = ++this.#keeps;
    this.#keptOrder.push(slot, this.#keeps);
    if (this.#summaries.size > 0) this.#summaries.delete(slot);
    this.#answerBytesTotal += bytes;
  }

  /** Gives up the oldest answer bodies, oldest first, until those kept total at most `bytes`. */
  #summarizeOldest(bytes: number): void {
    while (this.#answerBytesTotal > bytes) {
      const slot = this.#keptOrder.shift();
      if (slot < 0) return;
      this.#summaries.set(slot, summaryOf(this.#answers[slot]!, this.#slots.answerBytes[slot]!));
      this.#dropAnswer(slot);
    }
  }

  #dropAnswer(slot: number): void {
    if (this.#answers[slot] === undefined) return;
    this.#answers[slot] = undefined;
    this.#answerCount--;
    this.#answerBytesTotal -= this.#slots.answerBytes[slot]!;
  }
}

const EMPTY = 0;
const HANDLING = 1;
const DONE = 2;
const INITIAL_SLOTS = 1024;
/**
 * A ULID stamped more than this after its arrival (a sender whose clock runs ahead, or a made-up
 * id) goes through the Map of other ids: in a chunk it would raise the chunk's largest key, and
 * every fresh id until the clock caught up would have to look into that chunk too.
 */
const AHEAD_MS = 10;

/** Slots per chunk of the ring (a smaller ring is one chunk): see SeenSlots. */
const CHUNK_SLOTS = 4096;

/**
 * What a DedupeCache remembers, in typed arrays: a ring of slots in arrival order (the key, its
 * state, when it was seen, the size of its kept answer), cut into chunks, each with an
 * open-addressing index of its ULID keys (linear probing) and its smallest and largest key.
 * Why chunks: with one index over 100,000 ids, each lookup, insert and eviction landed somewhere
 * random in megabytes, and those cache and TLB misses cost a busy receiver about half a
 * microsecond per message (docs/benchmarks.md). A ULID begins with its time, so a fresh id is
 * above every key of the older chunks: its lookup reads two ranges and at most the newest
 * chunk's index, which the inserts keep in cache. An id from the past (a redelivery, a lagging
 * clock) is looked for in each chunk whose range holds it, newest first. An evicted or forgotten
 * slot is only marked EMPTY (lookups skip it); a chunk's index is cleared whole when the ring's
 * head leaves it, and the ring is full when its next slot would begin the chunk of its oldest.
 */
class SeenSlots {
  readonly size: number;
  readonly keys: Int32Array;
  /** Each slot's key hash, -1 for an id that is not indexed (not a ULID). */
  readonly hash: Int32Array;
  readonly state: Uint8Array;
  readonly at: Float64Array;
  readonly answerBytes: Float64Array;
  /** Which keep of an answer body the slot holds (DedupeCache counts them), to tell a stale place in KeptOrder. */
  readonly answerKeep: Float64Array;
  /** Slots per chunk, a power of two. */
  readonly #chunk: number;
  /** Each chunk's index in turn: slot + 1 of each key, 0 where free; two places per slot (at most half full). */
  readonly #index: Int32Array;
  readonly #indexMask: number;
  /** The smallest and the largest key indexed in each chunk; a chunk with none has its smallest above its largest. */
  readonly #min: Int32Array;
  readonly #max: Int32Array;
  /** The largest key of every chunk but the newest (all -1: none). A key above it can only be in the newest chunk. */
  readonly #olderMax = new Int32Array(ULID_KEY_WORDS).fill(-1);
  #head = 0;
  #length = 0;
  live = 0;

  constructor(size: number) {
    this.size = size;
    this.keys = new Int32Array(size * ULID_KEY_WORDS);
    this.hash = new Int32Array(size);
    this.state = new Uint8Array(size);
    this.at = new Float64Array(size);
    this.answerBytes = new Float64Array(size);
    this.answerKeep = new Float64Array(size);
    this.#chunk = Math.min(CHUNK_SLOTS, size);
    this.#index = new Int32Array(size * 2);
    this.#indexMask = this.#chunk * 2 - 1;
    this.#min = new Int32Array((size / this.#chunk) * ULID_KEY_WORDS).fill(NO_KEY_BELOW);
    this.#max = new Int32Array((size / this.#chunk) * ULID_KEY_WORDS).fill(-1);
  }

  /** No room for one more slot: the next would begin the oldest one's chunk (or the ring is all used). */
  get full(): boolean {
    if (this.#length === this.size) return true;
    const next = (this.#head + this.#length) & (this.size - 1);
    return this.#length > 0 && (next & (this.#chunk - 1)) === 0 && this.#chunkOf(next) === this.#chunkOf(this.#head);
  }

  /** The slot of `key` among the indexed ones, or -1. */
  find(key: Int32Array): number {
    if (this.#length === 0) return -1;
    const hash = hashOf(key);
    let chunk = this.#chunkOf((this.#head + this.#length - 1) & (this.size - 1));
    if (this.#holds(chunk, key)) {
      const slot = this.#probe(chunk, key, hash);
      if (slot >= 0) return slot;
    }
    // A fresh id is above every older chunk: nothing more to read.
    if (compareKeys(key, 0, this.#olderMax, 0) > 0) return -1;
    const oldest = this.#chunkOf(this.#head);
    const chunks = this.size / this.#chunk;
    while (chunk !== oldest) {
      chunk = (chunk + chunks - 1) % chunks;
      if (!this.#holds(chunk, key)) continue;
      const slot = this.#probe(chunk, key, hash);
      if (slot >= 0) return slot;
    }
    return -1;
  }

  /** Takes the next slot of the ring (there must be room) for the key at `keys[from..]`; `indexed` for a ULID key. */
  add(keys: Int32Array, from: number, state: number, at: number, indexed: boolean): number {
    const slot = (this.#head + this.#length) & (this.size - 1);
    // A new chunk begins: the one before it becomes an older one.
    if (this.#length > 0 && (slot & (this.#chunk - 1)) === 0) this.#raiseOlderMax((this.#chunkOf(slot) + this.size / this.#chunk - 1) % (this.size / this.#chunk));
    this.#length++;
    this.live++;
    this.state[slot] = state;
    this.at[slot] = at;
    this.answerBytes[slot] = 0;
    this.hash[slot] = -1;
    if (!indexed) return slot;
    const own = this.keys, to = slot * ULID_KEY_WORDS;
    for (let w = 0; w < ULID_KEY_WORDS; w++) own[to + w] = keys[from + w]!;
    const hash = hashOf(own, to);
    this.hash[slot] = hash;
    const chunk = this.#chunkOf(slot);
    const base = chunk * this.#chunk * 2, mask = this.#indexMask, index = this.#index;
    let i = hash & mask;
    while (index[base + i] !== 0) i = (i + 1) & mask;
    index[base + i] = slot + 1;
    const bound = chunk * ULID_KEY_WORDS;
    if (compareKeys(own, to, this.#min, bound) < 0) for (let w = 0; w < ULID_KEY_WORDS; w++) this.#min[bound + w] = own[to + w]!;
    if (compareKeys(own, to, this.#max, bound) > 0) for (let w = 0; w < ULID_KEY_WORDS; w++) this.#max[bound + w] = own[to + w]!;
    return slot;
  }

  /** Empties `slot` (it stays in the ring, and in its chunk's index, until the head passes it). */
  remove(slot: number): void {
    this.state[slot] = EMPTY;
    this.live--;
  }

  /** The oldest slot of the ring, empty or not; -1 when the ring is empty. */
  oldest(): number {
    return this.#length === 0 ? -1 : this.#head;
  }

  /** Drops the oldest slot from the ring (remove() it first unless it is empty); a chunk it leaves is cleared. */
  shift(): void {
    const left = this.#head;
    this.#head = (this.#head + 1) & (this.size - 1);
    this.#length--;
    if ((this.#head & (this.#chunk - 1)) === 0) this.#clear(this.#chunkOf(left));
  }

  /** A ring of `size` slots with the live slots of this one, in order; `moved[old slot]` is the new one. */
  copyLive(size: number): { slots: SeenSlots; moved: Int32Array } {
    const next = new SeenSlots(size);
    const moved = new Int32Array(this.size).fill(-1);
    for (let n = 0; n < this.#length; n++) {
      const slot = (this.#head + n) & (this.size - 1);
      if (this.state[slot] === EMPTY) continue;
      const to = next.add(this.keys, slot * ULID_KEY_WORDS, this.state[slot]!, this.at[slot]!, this.hash[slot] !== -1);
      next.answerBytes[to] = this.answerBytes[slot]!;
      next.answerKeep[to] = this.answerKeep[slot]!;
      moved[slot] = to;
    }
    return { slots: next, moved };
  }

  #chunkOf(slot: number): number { return (slot / this.#chunk) | 0; }

  /** True when `key` lies within the smallest and largest key of `chunk`. */
  #holds(chunk: number, key: Int32Array): boolean {
    const bound = chunk * ULID_KEY_WORDS;
    return compareKeys(key, 0, this.#min, bound) >= 0 && compareKeys(key, 0, this.#max, bound) <= 0;
  }

  /** The live slot of `key` in `chunk`'s index, or -1. */
  #probe(chunk: number, key: Int32Array, hash: number): number {
    const keys = this.keys, index = this.#index, mask = this.#indexMask;
    const base = chunk * this.#chunk * 2;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const entry = index[base + i]!;
      if (entry === 0) return -1;
      const slot = entry - 1, at = slot * ULID_KEY_WORDS;
      // An emptied slot keeps its place in the index: the same id begun again has a later one.
      if (keys[at] === key[0] && keys[at + 1] === key[1] && keys[at + 2] === key[2] && keys[at + 3] === key[3] && keys[at + 4] === key[4] && this.state[slot] !== EMPTY) return slot;
    }
  }

  #raiseOlderMax(chunk: number): void {
    if (compareKeys(this.#max, chunk * ULID_KEY_WORDS, this.#olderMax, 0) > 0) for (let w = 0; w < ULID_KEY_WORDS; w++) this.#olderMax[w] = this.#max[chunk * ULID_KEY_WORDS + w]!;
  }

  /** The head left `chunk`: its index and range start over, and the older chunks' largest key is found again. */
  #clear(chunk: number): void {
    this.#index.fill(0, chunk * this.#chunk * 2, (chunk + 1) * this.#chunk * 2);
    this.#min.fill(NO_KEY_BELOW, chunk * ULID_KEY_WORDS, (chunk + 1) * ULID_KEY_WORDS);
    this.#max.fill(-1, chunk * ULID_KEY_WORDS, (chunk + 1) * ULID_KEY_WORDS);
    this.#olderMax.fill(-1);
    if (this.#length === 0) return;
    const chunks = this.size / this.#chunk;
    const newest = this.#chunkOf((this.#head + this.#length - 1) & (this.size - 1));
    for (let c = this.#chunkOf(this.#head); c !== newest; c = (c + 1) % chunks) this.#raiseOlderMax(c);
  }
}

/** Above every key word (a word holds at most 30 bits): the smallest key of a chunk with none. */
const NO_KEY_BELOW = 0x7fffffff;

/** Orders two keys as their ULIDs order (every word is 0 or more): negative, 0 or positive. */
function compareKeys(a: Int32Array, aFrom: number, b: Int32Array, bFrom: number): number {
  for (let w = 0; w < ULID_KEY_WORDS; w++) {
    const d = a[aFrom + w]! - b[bFrom + w]!;
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * The slots whose answer bodies were kept, in the order they were kept, each with the number of
 * its keep. A body released or replaced leaves its place behind, stale (the slot holds another
 * keep, or none), skipped when it reaches the head. When the queue fills it is compacted, and
 * doubled only if the bodies still kept fill more than half of it: it stays within about
 * twice the bodies kept.
 */
class KeptOrder {
  /** Whether the body of keep number `keep` is still at `slot` (not released, replaced or evicted). */
  readonly #isKept: (slot: number, keep: number) => boolean;
  #slot = new Int32Array(256);
  #keep = new Float64Array(256);
  #head = 0;
  #tail = 0;
  constructor(isKept: (slot: number, keep: number) => boolean) {
    this.#isKept = isKept;
  }

  push(slot: number, keep: number): void {
    if (this.#tail === this.#slot.length) this.#makeRoom();
    this.#slot[this.#tail] = slot;
    this.#keep[this.#tail++] = keep;
  }

  /** The slot of the oldest body still kept, left on the queue (places gone stale before it are dropped); -1 when there is none. */
  peek(): number {
    while (this.#head < this.#tail) {
      const slot = this.#slot[this.#head]!;
      if (slot >= 0 && this.#isKept(slot, this.#keep[this.#head]!)) return slot;
      this.#head++;
    }
    this.#head = this.#tail = 0;
    return -1;
  }

  /** The slot of the oldest body still kept, taken off the queue; -1 when there is none. */
  shift(): number {
    while (this.#head < this.#tail) {
      const slot = this.#slot[this.#head]!, keep = this.#keep[this.#head++]!;
      if (slot >= 0 && this.#isKept(slot, keep)) return slot;
    }
    this.#head = this.#tail = 0;
    return -1;
  }

  /** The slots were renumbered (`moved[old]` is the new one, -1 for gone). */
  renumber(moved: Int32Array): void {
    for (let i = this.#head; i < this.#tail; i++) this.#slot[i] = moved[this.#slot[i]!]!;
  }

  #makeRoom(): void {
    let live = 0;
    for (let i = this.#head; i < this.#tail; i++) {
      const slot = this.#slot[i]!, keep = this.#keep[i]!;
      if (slot < 0 || !this.#isKept(slot, keep)) continue;
      this.#slot[live] = slot;
      this.#keep[live++] = keep;
    }
    this.#head = 0;
    this.#tail = live;
    if (live * 2 <= this.#slot.length) return;
    const slots = new Int32Array(this.#slot.length * 2), keeps = new Float64Array(this.#slot.length * 2);
    slots.set(this.#slot.subarray(0, live));
    keeps.set(this.#keep.subarray(0, live));
    this.#slot = slots;
    this.#keep = keeps;
  }
}

/** A 31-bit hash of the key at `key[from..]`, mixed from the random part of the ULID. */
function hashOf(key: Int32Array, from = 0): number {
  let h = Math.imul(key[from + 3]! ^ (key[from + 4]! << 20) ^ Math.imul(key[from + 2]!, 0x27d4eb2d), 0x9e3779b1);
  h ^= h >>> 15;
  h = Math.imul(h ^ key[from + 1]!, 0x85ebca77);
  h ^= h >>> 13;
  return h & 0x7fffffff;
}

function summaryOf(answer: Envelope, bytes: number): AnswerSummary {
  return { message_id: answer.message_id, message_type: answer.message_type, bytes };
}
