import type { Database as BunDatabase, Statement as BunStatement } from "bun:sqlite";
import type { DatabaseSync, StatementSync } from "node:sqlite";

/** What a statement binds: `?` parameters, in order. Other values (booleans, undefined) bind on Bun only. */
export type SqliteValue = string | number | bigint | Uint8Array | null;

/** What run() tells: rows changed and the last rowid inserted, as numbers on both runtimes. */
export interface SqliteChanges {
  changes: number;
  lastInsertRowid: number;
}

/**
 * A prepared statement with positional `?` parameters. Rows are objects keyed by column name
 * (null-prototype ones on node:sqlite); BLOBs come back as Uint8Array, integers as numbers.
 *
 * @example
 * const byId = db.query<{ text: string }>("SELECT text FROM facts WHERE id = ?");
 * byId.get(7)?.text; // undefined when there is no such row, on both runtimes
 */
export interface SqliteStatement<Row extends object = Record<string, unknown>> {
  run(...params: SqliteValue[]): SqliteChanges;
  /** The first row, or undefined (bun:sqlite's null is turned into undefined). */
  get(...params: SqliteValue[]): Row | undefined;
  all(...params: SqliteValue[]): Row[];
}

/** The sqlite module a database was opened with. */
export type SqliteDriver = "bun:sqlite" | "node:sqlite";

type Driver =
  | { kind: "bun:sqlite"; db: BunDatabase; statements: BunStatement[] }
  | { kind: "node:sqlite"; db: DatabaseSync };

/**
 * One SQLite database for Bun and Deno, one file format: bun:sqlite where it exists (the fast
 * path), node:sqlite's DatabaseSync elsewhere (Deno), with the same behaviour on both where the
 * stores rely on it. Neither module is loaded before open() (process.getBuiltinModule, which
 * both runtimes have), so importing a store costs no sqlite.
 *
 * What is made the same: node:sqlite's errors carry bun:sqlite's `code` ("SQLITE_FULL",
 * "SQLITE_CONSTRAINT_UNIQUE") and `errno`; get() finds no row as undefined; run() counts as
 * numbers; a safe integer binds as an INTEGER (node:sqlite binds every number as REAL);
 * foreign keys are off and "double-quoted" strings allowed, as in SQLite (and bun:sqlite);
 * transaction() runs `fn` at once, nests with savepoints and rolls back on a throw; close()
 * may be called twice. What is not: node:sqlite's rows have no prototype; it binds a missing
 * parameter as NULL where bun:sqlite throws, throws for booleans and undefined, and throws
 * reading an integer beyond 2^53 where bun:sqlite rounds it.
 *
 * @example
 * const db = SqliteDatabase.open(`${dir}/facts.db`);
 * db.exec("PRAGMA journal_mode = WAL; CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB)");
 * const put = db.query("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)");
 * db.transaction(() => put.run("a", new Uint8Array([1])));
 * db.query<{ value: Uint8Array }>("SELECT value FROM kv WHERE key = ?").get("a")?.value; // Uint8Array [1]
 * db.close();
 */
export class SqliteDatabase {
  #driver: Driver;
  #statements = new Map<string, SqliteStatement<object>>();
  #depth = 0;
  #open = true;

  private constructor(driver: Driver) {
    this.#driver = driver;
  }

  /**
   * Opens (creating if needed) the database at `path` (`:memory:` for a throwaway one).
   *
   * @example
   * const db = SqliteDatabase.open(":memory:");
   * db.driver; // "bun:sqlite" on Bun, "node:sqlite" on Deno
   */
  static open(path: string): SqliteDatabase {
    const bun = process.getBuiltinModule("bun:sqlite") as typeof import("bun:sqlite") | undefined;
    if (bun) return new SqliteDatabase({ kind: "bun:sqlite", db: new bun.Database(path, { create: true }), statements: [] });
    const node = process.getBuiltinModule("node:sqlite") as typeof import("node:sqlite") | undefined;
    if (!node) throw new Error(`cannot open ${path}: this runtime has neither bun:sqlite nor node:sqlite`);
    try {
      return new SqliteDatabase({ kind: "node:sqlite", db: new node.DatabaseSync(path, { enableForeignKeyConstraints: false, enableDoubleQuotedStringLiterals: true }) });
    } catch (error) {
      throw sqliteError(error);
    }
  }

  /** Which module this database runs on. */
  get driver(): SqliteDriver {
    return this.#driver.kind;
  }

  /** Runs one or more statements that bind nothing (pragmas, schema). */
  exec(sql: string): void {
    const driver = this.#driver;
    if (driver.kind === "bun:sqlite") {
      driver.db.exec(sql);
      return;
    }
    try {
      driver.db.exec(sql);
    } catch (error) {
      throw sqliteError(error);
    }
  }

  /**
   * The statement for `sql`, prepared once per database and reused (as bun:sqlite's query()).
   *
   * @example
   * db.query("DELETE FROM kv WHERE key = ?").run("a").changes; // 1
   */
  query<Row extends object = Record<string, unknown>>(sql: string): SqliteStatement<Row> {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement as SqliteStatement<Row>;
  }

  /**
   * Runs `fn` (synchronous) in a transaction and returns what it returns: committed when it
   * returns, rolled back when it (or the commit) throws. Nested calls are savepoints: an inner
   * one that throws undoes only its own writes, if the outer one catches.
   *
   * @example
   * const id = db.transaction(() => Number(insert.run("fact").lastInsertRowid));
   */
  transaction<T>(fn: () => T): T {
    const depth = this.#depth;
    const savepoint = `hermes_${depth}`;
    this.query(depth === 0 ? "BEGIN" : `SAVEPOINT ${savepoint}`).run();
    this.#depth = depth + 1;
    try {
      const result = fn();
      this.query(depth === 0 ? "COMMIT" : `RELEASE ${savepoint}`).run();
      return result;
    } catch (error) {
      this.#rollback(depth, savepoint);
      throw error;
    } finally {
      this.#depth = depth;
    }
  }

  /** Closes the database; closing it again does nothing. */
  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#statements.clear();
    const driver = this.#driver;
    if (driver.kind === "node:sqlite") {
      driver.db.close();
      return;
    }
    // bun:sqlite closes with sqlite3_close_v2: a statement left unfinalized would keep the
    // file (and its WAL) open until it is collected.
    for (const statement of driver.statements) statement.finalize();
    driver.db.close();
  }

  #rollback(depth: number, savepoint: string): void {
    const driver = this.#driver;
    // SQLite rolls a transaction back by itself on some errors (a full disk among them):
    // then there is nothing left to roll back.
    if (!(driver.kind === "bun:sqlite" ? driver.db.inTransaction : driver.db.isTransaction)) return;
    try {
      if (depth === 0) this.query("ROLLBACK").run();
      else {
        this.query(`ROLLBACK TO ${savepoint}`).run();
        this.query(`RELEASE ${savepoint}`).run();
      }
    } catch {
      // The error that made us roll back is the one the caller needs to see.
    }
  }

  #prepare(sql: string): SqliteStatement<object> {
    const driver = this.#driver;
    if (driver.kind === "bun:sqlite") {
      const statement = driver.db.prepare<object, SqliteValue[]>(sql);
      driver.statements.push(statement);
      return {
        run: (...params) => statement.run(...params) as SqliteChanges,
        get: (...params) => statement.get(...params) ?? undefined,
        all: (...params) => statement.all(...params),
      };
    }
    let statement: StatementSync;
    try {
      statement = driver.db.prepare(sql);
    } catch (error) {
      throw sqliteError(error);
    }
    return {
      run(...params) {
        try {
          const { changes, lastInsertRowid } = statement.run(...bindable(params));
          return { changes: Number(changes), lastInsertRowid: Number(lastInsertRowid) };
        } catch (error) {
          throw sqliteError(error);
        }
      },
      get(...params) {
        try {
          return statement.get(...bindable(params));
        } catch (error) {
          throw sqliteError(error);
        }
      },
      all(...params) {
        try {
          return statement.all(...bindable(params));
        } catch (error) {
          throw sqliteError(error);
        }
      },
    };
  }
}

/** node:sqlite binds every number as REAL; bun:sqlite binds a safe integer (not -0) as INTEGER, and so do we. */
function bindable(params: SqliteValue[]): SqliteValue[] {
  return params.map((value) => (typeof value === "number" && Number.isSafeInteger(value) && !Object.is(value, -0) ? BigInt(value) : value));
}

// Result code names by number (sqlite3.h), and the extended ones' suffixes by (code >> 8).
const PRIMARY = ["OK", "ERROR", "INTERNAL", "PERM", "ABORT", "BUSY", "LOCKED", "NOMEM", "READONLY", "INTERRUPT", "IOERR", "CORRUPT", "NOTFOUND", "FULL", "CANTOPEN", "PROTOCOL", "EMPTY", "SCHEMA", "TOOBIG", "CONSTRAINT", "MISMATCH", "MISUSE", "NOLFS", "AUTH", "FORMAT", "RANGE", "NOTADB", "NOTICE", "WARNING"];
const EXTENDED: Record<number, string[]> = {
  0: ["", "LOAD_PERMANENTLY", "SYMLINK"],
  1: ["", "MISSING_COLLSEQ", "RETRY", "SNAPSHOT"],
  4: ["", "", "ROLLBACK"],
  5: ["", "RECOVERY", "SNAPSHOT", "TIMEOUT"],
  6: ["", "SHAREDCACHE", "VTAB"],
  8: ["", "RECOVERY", "CANTLOCK", "ROLLBACK", "DBMOVED", "CANTINIT", "DIRECTORY"],
  10: ["", "READ", "SHORT_READ", "WRITE", "FSYNC", "DIR_FSYNC", "TRUNCATE", "FSTAT", "UNLOCK", "RDLOCK", "DELETE", "BLOCKED", "NOMEM", "ACCESS", "CHECKRESERVEDLOCK", "LOCK", "CLOSE", "DIR_CLOSE", "SHMOPEN", "SHMSIZE", "SHMLOCK", "SHMMAP", "SEEK", "DELETE_NOENT", "MMAP", "GETTEMPPATH", "CONVPATH", "VNODE", "AUTH", "BEGIN_ATOMIC", "COMMIT_ATOMIC", "ROLLBACK_ATOMIC", "DATA", "CORRUPTFS"],
  11: ["", "VTAB", "SEQUENCE", "INDEX"],
  14: ["", "NOTEMPDIR", "ISDIR", "FULLPATH", "CONVPATH", "DIRTYWAL", "SYMLINK"],
  19: ["", "CHECK", "COMMITHOOK", "FOREIGNKEY", "FUNCTION", "NOTNULL", "PRIMARYKEY", "TRIGGER", "UNIQUE", "VTAB", "ROWID", "PINNED", "DATATYPE"],
  23: ["", "USER"],
  27: ["", "RECOVER_WAL", "RECOVER_ROLLBACK"],
  28: ["", "AUTOINDEX"],
};
// Deno's exec() throws without `errcode`: its message, where it is SQLite's text for a code, tells the code.
const BY_MESSAGE: Array<[RegExp, number]> = [
  [/^database or disk is full/, 13],
  [/^disk I\/O error/, 10],
  [/^database is locked/, 5],
  [/^database table is locked/, 6],
  [/^attempt to write a readonly database/, 8],
  [/^database disk image is malformed/, 11],
  [/^unable to open database file/, 14],
  [/^file is not a database/, 26],
  [/constraint failed/, 19],
];

/** The name bun:sqlite gives result code `errno`: "SQLITE_FULL", "SQLITE_IOERR_WRITE". */
function codeName(errno: number): string {
  const primary = PRIMARY[errno & 0xff] ?? "ERROR";
  const extended = errno > 0xff ? EXTENDED[errno & 0xff]?.[errno >> 8] : undefined;
  return extended ? `SQLITE_${primary}_${extended}` : `SQLITE_${primary}`;
}

/**
 * node:sqlite's error (`code: "ERR_SQLITE_ERROR"`, the result code in `errcode`) as bun:sqlite
 * throws it (`code: "SQLITE_FULL"`, `errno: 13`), with the same message: the stores read
 * `code`. Errors that are not SQLite's (a closed database, a value that cannot bind) pass as they are.
 */
function sqliteError(error: unknown): unknown {
  const e = error as { code?: unknown; errcode?: unknown; message?: unknown } | null;
  if (e?.code !== "ERR_SQLITE_ERROR" || typeof e.message !== "string") return error;
  const message = e.message;
  const errno = typeof e.errcode === "number" ? e.errcode : (BY_MESSAGE.find(([pattern]) => pattern.test(message))?.[1] ?? 1);
  return Object.assign(new Error(message, { cause: error }), { name: "SQLiteError", code: codeName(errno), errno });
}
