/**
 * What the stores rely on of SqliteDatabase, observed in one run: run in this process by
 * test/deno/sqlite-deno.test.ts (bun:sqlite) and on Deno by sqlite-behaviour-fixture.ts
 * (node:sqlite), and the two reports must be equal but for the driver.
 */
import { join } from "node:path";
import { SqliteDatabase } from "../../src/actor/sqlite-database.ts";

/** What a throw looked like: the fields the stores read. */
function thrown(run: () => unknown): { name?: string; code?: unknown; errno?: unknown; message?: string } | "no error" {
  try {
    run();
    return "no error";
  } catch (error) {
    const e = error as { name?: string; code?: unknown; errno?: unknown; message?: string };
    return { name: e.name, code: e.code, errno: e.errno, message: e.message };
  }
}

/** Opens a database in `dir`, exercises it, closes it and says what it saw. */
export function sqliteBehaviour(dir: string): Record<string, unknown> {
  const db = SqliteDatabase.open(join(dir, "behaviour.db"));
  const report: Record<string, unknown> = { driver: db.driver };
  try {
    db.exec(`PRAGMA journal_mode = WAL; PRAGMA page_size = 1024;
             CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT UNIQUE, v, b BLOB)`);
    const insert = db.query("INSERT INTO t (k, v, b) VALUES (?, ?, ?)");
    const count = () => db.query<{ n: number }>("SELECT count(*) AS n FROM t").get()!.n;
    const first = insert.run("a", 1, new Uint8Array([1, 2, 3]));
    report.run = { ...first, types: [typeof first.changes, typeof first.lastInsertRowid] };
    const row = db.query<{ id: number; v: unknown; type: string; b: Uint8Array }>("SELECT id, v, typeof(v) AS type, b FROM t WHERE k = ?").get("a")!;
    report.row = { id: row.id, v: row.v, type: row.type, blob: row.b.constructor.name, bytes: Array.from(row.b) };
    report.missing = db.query("SELECT id FROM t WHERE k = ?").get("none") === undefined ? "undefined" : "not undefined";
    report.none = db.query("SELECT id FROM t WHERE k = ?").all("none");
    // How each value binds: SQLite's own type of it.
    const typeOf = db.query<{ type: string }>("SELECT typeof(?) AS type");
    const values: Array<[string, string | number | bigint | Uint8Array | null]> = [
      ["7", 7], ["-0", -0], ["1.5", 1.5], ["2^53", 2 ** 53], ["2n^60", 2n ** 60n], ["text", "x"], ["null", null], ["bytes", new Uint8Array([0])], ["NaN", NaN],
    ];
    report.binds = Object.fromEntries(values.map(([name, value]) => [name, typeOf.get(value)!.type]));
    report.foreignKeys = db.query("SELECT * FROM pragma_foreign_keys").get();
    report.doubleQuoted = thrown(() => db.query('SELECT "not a column" AS s').get());

    report.committed = db.transaction(() => insert.run("b", 2, null).changes);
    report.rolledBack = thrown(() =>
      db.transaction(() => {
        insert.run("c", 3, null);
        throw new Error("undo");
      }),
    );
    // A nested transaction is a savepoint: the inner one's failure undoes only its own rows.
    db.transaction(() => {
      insert.run("d", 4, null);
      try {
        db.transaction(() => {
          insert.run("e", 5, null);
          insert.run("a", 0, null);
        });
      } catch {
        // the duplicate "a": the outer transaction goes on
      }
    });
    report.keys = db.query<{ k: string }>("SELECT k FROM t ORDER BY id").all().map((r) => r.k);
    report.constraint = thrown(() => insert.run("a", 0, null));
    report.syntax = { ...(thrown(() => db.exec("SELEC 1")) as object), message: undefined };
    report.prepare = thrown(() => db.query("SELECT * FROM no_such_table"));

    // A real "disk full": the file may not grow past the pages it has.
    const pages = db.query<{ page_count: number }>("PRAGMA page_count").get()!.page_count;
    db.exec(`PRAGMA max_page_count = ${pages}`);
    const before = count();
    report.full = thrown(() => insert.run("big", 0, new Uint8Array(64 * 1024)));
    report.fullInTransaction = thrown(() =>
      db.transaction(() => {
        insert.run("f", 6, null);
        insert.run("big", 0, new Uint8Array(64 * 1024));
      }),
    );
    report.fullWroteNothing = count() === before;
    db.exec(`PRAGMA max_page_count = ${pages * 1000}`);
    report.afterFull = db.transaction(() => insert.run("big", 0, new Uint8Array(64 * 1024)).changes);
  } finally {
    db.close();
  }
  report.closedTwice = thrown(() => db.close());
  return report;
}
