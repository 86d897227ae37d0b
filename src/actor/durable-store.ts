import { Database } from "bun:sqlite";
import { Packr, Unpackr } from "msgpackr";
import { DedupeCache, type DedupeEntry, type DedupeStore } from "../../mesh/dedupe-cache.ts";
import type { Envelope } from "../protocol/envelope.ts";
import { DELETED, type ActorStore } from "./actor-store.ts";

/** What one handler call did, waiting for its commit. */
export interface StagedEffects {
  writes: Map<string, unknown>;
  outbox: Array<{ destination: string; envelope: Envelope }>;
}

const packr = new Packr({ useRecords: false, moreTypes: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, moreTypes: true });

/**
 * A durable actor's memory in bun:sqlite (WAL): the dedupe set with the answers sent, the
 * outbox of messages not yet acknowledged by their destination, and the key-value state.
 * Everything one handler call did is committed in one transaction when its message completes,
 * so a crash either loses the whole call (it is redelivered and runs again) or none of it
 * (a redelivery finds the dedupe record and gets the stored answer).
 *
 * @example
 * const store = DurableStore.open(`${dir}/counter.db`);
 * store.stage(env.message_id, { writes, outbox }); // then complete() commits it
 */
export class DurableStore implements DedupeStore, ActorStore {
  #db: Database;
  #cache: DedupeCache;
  #staged = new Map<string, StagedEffects>();
  #kv = new Map<string, unknown>();
  #deliveredBatch: Array<[string, string]> = [];
  #closed = false;
  #statements;

  private constructor(db: Database, cache: DedupeCache) {
    this.#db = db;
    this.#cache = cache;
    this.#statements = {
      dedupe: db.query("INSERT OR REPLACE INTO dedupe (message_id, at, answer) VALUES (?, ?, ?)"),
      put: db.query("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)"),
      del: db.query("DELETE FROM kv WHERE key = ?"),
      outbox: db.query("INSERT OR REPLACE INTO outbox (message_id, destination, envelope, at) VALUES (?, ?, ?, ?)"),
      delivered: db.query("DELETE FROM outbox WHERE message_id = ? AND destination = ?"),
      answer: db.query("SELECT answer FROM dedupe WHERE message_id = ?"),
    };
  }

  /** Opens (creating if needed) the store at `path` and loads the dedupe set and state. */
  static open(path: string, options: { capacity?: number; maxAgeMs?: number } = {}): DurableStore {
    const db = new Database(path, { create: true });
    // WAL with synchronous=NORMAL: a committed transaction survives the process being killed.
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;");
    db.exec(`CREATE TABLE IF NOT EXISTS dedupe (message_id TEXT PRIMARY KEY, at INTEGER NOT NULL, answer BLOB);
             CREATE INDEX IF NOT EXISTS dedupe_at ON dedupe (at);
             CREATE TABLE IF NOT EXISTS outbox (message_id TEXT NOT NULL, destination TEXT NOT NULL, envelope BLOB NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (message_id, destination));
             CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB)`);
    const cache = new DedupeCache(options);
    const store = new DurableStore(db, cache);
    const oldest = Date.now() - cache.maxAgeMs;
    db.query("DELETE FROM dedupe WHERE at < ?").run(oldest);
    const rows = db.query("SELECT message_id, at, answer FROM dedupe ORDER BY at DESC LIMIT ?").all(cache.capacity) as Array<{ message_id: string; at: number; answer: Uint8Array | null }>;
    for (const row of rows.reverse()) cache.complete(row.message_id, row.answer ? (unpackr.unpack(row.answer) as Envelope) : undefined);
    for (const row of db.query("SELECT key, value FROM kv").all() as Array<{ key: string; value: Uint8Array }>) store.#kv.set(row.key, unpackr.unpack(row.value));
    return store;
  }

  // ---- dedupe ----

  lookup(id: string): DedupeEntry | undefined {
    const entry = this.#cache.lookup(id);
    if (entry?.state === "done" && !entry.answer) {
      const row = this.#statements.answer.get(id) as { answer: Uint8Array | null } | null;
      if (row?.answer) return { ...entry, answer: unpackr.unpack(row.answer) as Envelope };
    }
    return entry;
  }

  begin(id: string, now?: number): void {
    this.#cache.begin(id, now);
  }

  /** The message is done: its record, its answer and its staged effects commit together. */
  complete(id: string, answer?: Envelope): void {
    const effects = this.#staged.get(id);
    this.#staged.delete(id);
    const now = Date.now();
    this.#db.transaction(() => {
      this.#statements.dedupe.run(id, now, answer ? packr.pack(answer) : null);
      if (!effects) return;
      for (const [key, value] of effects.writes) {
        if (value === DELETED) this.#statements.del.run(key);
        else this.#statements.put.run(key, packr.pack(value));
      }
      for (const { destination, envelope } of effects.outbox) this.#statements.outbox.run(envelope.message_id, destination, packr.pack(envelope), now);
    })();
    if (effects) {
      for (const [key, value] of effects.writes) {
        if (value === DELETED) this.#kv.delete(key);
        else this.#kv.set(key, value);
      }
    }
    this.#cache.complete(id, answer);
  }

  forget(id: string): void {
    this.#staged.delete(id);
    this.#cache.forget(id);
  }

  /** Memory keeps the id only; the answer stays on disk in case the requester restarts and asks again. */
  releaseAnswer(id: string): void {
    this.#cache.releaseAnswer(id);
  }

  // ---- staging ----

  /** Effects of the call handling `id`, committed by complete(id). */
  stage(id: string, effects: StagedEffects): void {
    this.#staged.set(id, effects);
  }

  /** Drops staged effects (the call failed or was already answered). */
  discard(id: string): void {
    this.#staged.delete(id);
  }

  // ---- state ----

  get<T = unknown>(key: string): T | undefined {
    return this.#kv.get(key) as T | undefined;
  }

  /** Outside a handler call: written at once. */
  set(key: string, value: unknown): void {
    this.#statements.put.run(key, packr.pack(value));
    this.#kv.set(key, value);
  }

  delete(key: string): void {
    this.#statements.del.run(key);
    this.#kv.delete(key);
  }

  keys(prefix = ""): string[] {
    return [...this.#kv.keys()].filter((k) => k.startsWith(prefix)).sort();
  }

  // ---- outbox ----

  /** Messages committed but not acknowledged by their destination: to resend after a restart. */
  pendingOutbox(): Array<{ destination: string; envelope: Envelope }> {
    const rows = this.#db.query("SELECT destination, envelope FROM outbox ORDER BY at, rowid").all() as Array<{ destination: string; envelope: Uint8Array }>;
    return rows.map((row) => ({ destination: row.destination, envelope: unpackr.unpack(row.envelope) as Envelope }));
  }

  /** The destination acknowledged a message: its outbox row goes (batched per tick). */
  delivered(messageId: string, destination: string): void {
    if (this.#deliveredBatch.push([messageId, destination]) === 1) {
      queueMicrotask(() => this.#flushDelivered());
    }
  }

  #flushDelivered(): void {
    if (this.#closed || this.#deliveredBatch.length === 0) return;
    const batch = this.#deliveredBatch;
    this.#deliveredBatch = [];
    this.#db.transaction(() => {
      for (const [id, dest] of batch) this.#statements.delivered.run(id, dest);
    })();
  }

  close(): void {
    this.#flushDelivered();
    this.#closed = true;
    this.#db.close();
  }
}
