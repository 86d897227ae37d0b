import { existsSync } from "node:fs";
import { basename } from "node:path";
import { Packr, Unpackr } from "msgpackr";
import { DedupeCache, type DedupeEntry, type DedupeStore } from "../../mesh/dedupe-cache.ts";
import type { Envelope } from "../../mesh/envelope.ts";
import { createPlainCodec } from "../../mesh/codecs.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { DELETED, type ActorStore } from "./actor-store.ts";
import { createLogger, type Logger } from "../../mesh/logger.ts";
import { SqliteDatabase } from "./sqlite-database.ts";

/** What one handler call did, waiting for its commit. */
export interface StagedEffects {
  writes: Map<string, unknown>;
  outbox: Array<{ destination: string; envelope: Envelope }>;
}

/**
 * Settings of a durable store.
 *
 * @example
 * const store = DurableStore.open(`${dir}/data/ledger.db`, { log: createLogger({ actor: "ledger" }) });
 */
export interface DurableStoreOptions {
  /** Dedupe ids remembered (default 100,000). */
  capacity?: number;
  /** How long a dedupe id is remembered, ms (default 10 minutes). */
  maxAgeMs?: number;
  /** Where the store's warnings go (it cannot commit; it commits again). Default: JSON Lines on standard error. */
  log?: Logger;
}

const packr = new Packr({ useRecords: false, moreTypes: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, moreTypes: true });
// Answers and outbox envelopes are stored as they go on the wire (plain msgpack), so a
// redelivered answer keeps every payload value exactly: timestamps' nanoseconds, ext types,
// big integers. The store's own values keep msgpackr's richer types (Date, Map, Set).
const envelopes = createPlainCodec();
const packEnvelope = (env: Envelope): Uint8Array => envelopes.encode(env);
const unpackEnvelope = (bytes: Uint8Array): Envelope => envelopes.decode(bytes) as Envelope;
/**
 * Test-only fault injection, read when a store opens: while the file this variable names
 * exists, every write of the store fails with SQLITE_FULL, as on a full disk. The event log
 * reads the same variable (src/observability/event-log.ts). Never set it outside tests.
 */
const DISK_FULL_ENV = "HERMES_TEST_DISK_FULL";

/**
 * A durable actor's memory in SQLite (WAL; see SqliteDatabase: bun:sqlite on Bun, node:sqlite
 * on Deno, one file format): the dedupe set with the answers sent, the outbox of messages not
 * yet acknowledged by their destination, and the key-value state.
 * Everything one handler call did is committed in one transaction when its message completes,
 * so a crash either loses the whole call (it is redelivered and runs again) or none of it
 * (a redelivery finds the dedupe record and gets the stored answer).
 *
 * A commit the disk refuses (SQLITE_FULL) writes nothing and throws code 6 (`resource:
 * "disk"`): the call did not happen and its message stays unhandled, so the same message runs
 * again when it comes back. The store stays usable: the next commit that finds space works.
 * The first refusal is warned about, and so is the first write that works again, with the
 * number refused in between.
 *
 * @example
 * const store = DurableStore.open(`${dir}/counter.db`);
 * store.commit(env.message_id, { writes, outbox }, answer); // throws code 6 on a full disk
 * store.stage(env.message_id, { writes, outbox }); // or: complete() commits it with the answer
 */
export class DurableStore implements DedupeStore, ActorStore {
  #db: SqliteDatabase;
  #cache: DedupeCache;
  #staged = new Map<string, StagedEffects>();
  #kv = new Map<string, unknown>();
  #deliveredBatch: Array<[string, string]> = [];
  /** Committed by commit() ahead of their answer, with that answer's type: complete() only records them in memory. */
  #committed = new Map<string, string | undefined>();
  /** Their commit was refused and they are answered code 6: complete() records nothing. */
  #refused = new Set<string>();
  /** Writes failing now: since when, how many refused since, the first error. */
  #outage: { since: number; refused: number; error: string } | undefined;
  #name: string;
  #log: Logger;
  #simulatedFull: string | undefined;
  #closed = false;
  #statements;

  private constructor(db: SqliteDatabase, cache: DedupeCache, path: string, log: Logger | undefined) {
    this.#db = db;
    this.#cache = cache;
    this.#name = basename(path);
    this.#log = log ?? createLogger({ component: "durable-store", db: this.#name });
    this.#simulatedFull = process.env[DISK_FULL_ENV] || undefined;
    this.#statements = {
      dedupe: db.query("INSERT OR REPLACE INTO dedupe (message_id, at, answer) VALUES (?, ?, ?)"),
      put: db.query("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)"),
      del: db.query("DELETE FROM kv WHERE key = ?"),
      outbox: db.query("INSERT OR REPLACE INTO outbox (message_id, destination, envelope, at) VALUES (?, ?, ?, ?)"),
      delivered: db.query("DELETE FROM outbox WHERE message_id = ? AND destination = ?"),
      answer: db.query<{ answer: Uint8Array | null }>("SELECT answer FROM dedupe WHERE message_id = ?"),
      replaceAnswer: db.query("UPDATE dedupe SET answer = ? WHERE message_id = ?"),
    };
  }

  /** Opens (creating if needed) the store at `path` and loads the dedupe set and state. */
  static open(path: string, options: DurableStoreOptions = {}): DurableStore {
    const db = SqliteDatabase.open(path);
    // WAL with synchronous=NORMAL: a committed transaction survives the process being killed.
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;");
    db.exec(`CREATE TABLE IF NOT EXISTS dedupe (message_id TEXT PRIMARY KEY, at INTEGER NOT NULL, answer BLOB);
             CREATE INDEX IF NOT EXISTS dedupe_at ON dedupe (at);
             CREATE TABLE IF NOT EXISTS outbox (message_id TEXT NOT NULL, destination TEXT NOT NULL, envelope BLOB NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (message_id, destination));
             CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB)`);
    const cache = new DedupeCache(options);
    const store = new DurableStore(db, cache, path, options.log);
    const oldest = Date.now() - cache.maxAgeMs;
    try {
      store.#write(() => db.query("DELETE FROM dedupe WHERE at < ?").run(oldest));
    } catch {
      // A full disk at start: old ids stay until a later start prunes them (the refusal was warned about).
    }
    const rows = db.query<{ message_id: string; at: number; answer: Uint8Array | null }>("SELECT message_id, at, answer FROM dedupe ORDER BY at DESC LIMIT ?").all(cache.capacity);
    for (const row of rows.reverse()) cache.complete(row.message_id, row.answer ? unpackEnvelope(row.answer) : undefined);
    for (const row of db.query<{ key: string; value: Uint8Array }>("SELECT key, value FROM kv").all()) store.#kv.set(row.key, unpackr.unpack(row.value));
    return store;
  }

  // ---- dedupe ----

  lookup(id: string): DedupeEntry | undefined {
    const entry = this.#cache.lookup(id);
    if (entry?.state === "done" && !entry.answer) {
      const row = this.#statements.answer.get(id);
      if (row?.answer) return { ...entry, answer: unpackEnvelope(row.answer) };
    }
    return entry;
  }

  begin(id: string, now?: number): void {
    this.#cache.begin(id, now);
  }

  /**
   * The message is done: its record, its answer and its staged effects commit together (or
   * were committed already by commit(), or refused, see there).
   *
   * When the disk refuses this commit: an answer alone (an error, a timeout) is still sent and
   * remembered in memory only, since nothing of the call is lost with it; a call with staged
   * effects (an event handler's) is forgotten and the code-6 error thrown, so that the mesh
   * acknowledges nothing and the message is handled again when it comes back.
   */
  complete(id: string, answer?: Envelope): void {
    if (this.#committed.has(id)) {
      const committedType = this.#committed.get(id);
      this.#committed.delete(id);
      // The mesh replaced the committed answer on its way out (it could not be sent): so does the record.
      if (answer && answer.message_type !== committedType) this.#replaceAnswer(id, answer);
      this.#cache.complete(id, answer);
      return;
    }
    if (this.#refused.delete(id)) {
      this.#cache.forget(id);
      return;
    }
    const effects = this.#staged.get(id);
    this.#staged.delete(id);
    try {
      this.#commitNow(id, effects, answer);
    } catch (error) {
      if (effects && (effects.writes.size > 0 || effects.outbox.length > 0)) {
        this.#cache.forget(id);
        throw error;
      }
    }
    this.#cache.complete(id, answer);
  }

  /**
   * Commits what the call handling `id` did, with the answer it will send, now: before that
   * answer goes out. complete(id) then only records it in memory.
   *
   * Throws code 6 (`resource: "disk"`, `detail`) when the disk is full (code 7 for another
   * failure to write). Then nothing of the call was written, its writes are not applied, and
   * the message counts as not handled: the code-6 answer that follows is recorded nowhere
   * (complete() forgets the id), so the same message runs again when it is sent again.
   */
  commit(id: string, effects: StagedEffects, answer?: Envelope): void {
    this.#staged.delete(id);
    try {
      this.#commitNow(id, effects, answer);
    } catch (error) {
      this.#refused.add(id);
      throw error;
    }
    this.#committed.set(id, answer?.message_type);
  }

  #replaceAnswer(id: string, answer: Envelope): void {
    try {
      this.#write(() => this.#statements.replaceAnswer.run(packEnvelope(answer), id));
    } catch {
      // A full disk: the record keeps the first answer; memory has the one sent.
    }
  }

  /** One transaction: the dedupe record with its answer, the writes, the outbox; then memory. Throws what #write throws. */
  #commitNow(id: string, effects: StagedEffects | undefined, answer: Envelope | undefined): void {
    const now = Date.now();
    this.#write(() =>
      this.#db.transaction(() => {
        this.#statements.dedupe.run(id, now, answer ? packEnvelope(answer) : null);
        if (!effects) return;
        for (const [key, value] of effects.writes) {
          if (value === DELETED) this.#statements.del.run(key);
          else this.#statements.put.run(key, packr.pack(value));
        }
        for (const { destination, envelope } of effects.outbox) this.#statements.outbox.run(envelope.message_id, destination, packEnvelope(envelope), now);
      }),
    );
    if (effects) {
      for (const [key, value] of effects.writes) {
        if (value === DELETED) this.#kv.delete(key);
        else this.#kv.set(key, value);
      }
    }
  }

  forget(id: string): void {
    this.#staged.delete(id);
    this.#committed.delete(id);
    this.#refused.delete(id);
    this.#cache.forget(id);
  }

  /** Memory keeps the id only; the answer stays on disk in case the requester restarts and asks again. */
  releaseAnswer(id: string, answer?: Envelope): void {
    this.#cache.releaseAnswer(id, answer);
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

  /** Outside a handler call: written at once (throws code 6 on a full disk, the value unchanged). */
  set(key: string, value: unknown): void {
    this.#write(() => this.#statements.put.run(key, packr.pack(value)));
    this.#kv.set(key, value);
  }

  delete(key: string): void {
    this.#write(() => this.#statements.del.run(key));
    this.#kv.delete(key);
  }

  keys(prefix = ""): string[] {
    return [...this.#kv.keys()].filter((k) => k.startsWith(prefix)).sort();
  }

  // ---- outbox ----

  /** Messages committed but not acknowledged by their destination: to resend after a restart. */
  pendingOutbox(): Array<{ destination: string; envelope: Envelope }> {
    const rows = this.#db.query<{ destination: string; envelope: Uint8Array }>("SELECT destination, envelope FROM outbox ORDER BY at, rowid").all();
    return rows.map((row) => ({ destination: row.destination, envelope: unpackEnvelope(row.envelope) }));
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
    try {
      this.#write(() =>
        this.#db.transaction(() => {
          for (const [id, dest] of batch) this.#statements.delivered.run(id, dest);
        }),
      );
    } catch {
      // A full disk: the rows go with the next batch. Rows left at a crash are only resent
      // after the restart, and their receivers deduplicate them.
      this.#deliveredBatch = batch.concat(this.#deliveredBatch);
    }
  }

  close(): void {
    this.#flushDelivered();
    this.#closed = true;
    if (this.#outage) {
      this.#log.warn("durable store closed while it could not write", { db: this.#name, refused: this.#outage.refused, since: this.#outage.since, error: this.#outage.error });
    }
    this.#db.close();
  }

  /**
   * Runs one write (a statement or a whole transaction). SQLite refusing it is rethrown as a
   * HermesError: code 6 with `resource: "disk"` when the disk is full (SQLITE_FULL, or an I/O
   * error writing), code 7 otherwise; the first of a run of refusals is warned about, and the
   * first success after them too. Anything else (a value msgpackr cannot pack) is rethrown as is.
   */
  #write<T>(run: () => T): T {
    let result: T;
    try {
      if (this.#simulatedFull !== undefined && existsSync(this.#simulatedFull)) throw simulatedFull();
      result = run();
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (typeof code !== "string" || !code.startsWith("SQLITE_")) throw error;
      throw this.#refusal(error, code);
    }
    if (this.#outage) {
      const { since, refused, error } = this.#outage;
      this.#outage = undefined;
      this.#log.warn("durable store commits again", { db: this.#name, refused, since, error });
    }
    return result;
  }

  #refusal(error: unknown, sqliteCode: string): HermesError {
    const message = error instanceof Error ? error.message : String(error);
    const disk = sqliteCode === "SQLITE_FULL" || sqliteCode.startsWith("SQLITE_IOERR");
    if (this.#outage) {
      this.#outage.refused++;
    } else {
      this.#outage = { since: Date.now(), refused: 1, error: message };
      this.#log.warn("durable store cannot commit: calls are refused (code 6 on a full disk) and recorded nowhere until it can", { db: this.#name, error: message, sqlite_code: sqliteCode });
    }
    const detail = `${this.#name} cannot commit: ${message}`;
    return new HermesError(disk ? ErrorCode.RESOURCE_EXHAUSTED : ErrorCode.INTERNAL, detail, { ...(disk && { resource: "disk" }), sqlite_code: sqliteCode }, { cause: error });
  }
}

/** What SqliteDatabase throws when the disk is full (on either runtime), for the test-only DISK_FULL_ENV injection. */
function simulatedFull(): Error {
  return Object.assign(new Error(`database or disk is full (simulated by ${DISK_FULL_ENV})`), { code: "SQLITE_FULL", errno: 13 });
}
