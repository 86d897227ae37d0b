import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { SqliteDatabase } from "../actor/sqlite-database.ts";

/** One recalled fact; `score` is higher for more relevant facts (negated FTS5 bm25). */
export interface Fact {
  id: number;
  text: string;
  meta: Record<string, unknown>;
  score: number;
  /** When it was remembered, ms since the epoch. */
  at: number;
}

/** Longest fact accepted, in UTF-16 units. */
export const MAX_FACT_LENGTH = 100_000;
/** Most results one recall returns. */
export const MAX_RECALL = 100;
// A question longer than this many distinct terms says nothing more; it only slows the match.
const MAX_QUERY_TERMS = 32;

// Han, Hiragana and Katakana are written without spaces, and unicode61 makes a whole run one
// token, so "深色主题" would never match "用户喜欢深色主题". trigram finds it but misses two-character
// words (主题). So CJK runs are indexed as their characters plus overlapping bigrams.
const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]+/gu;
const TERM = /[\p{L}\p{N}\p{M}]+/gu;

/**
 * Long-term facts in SQLite (WAL; bun:sqlite on Bun, node:sqlite on Deno) with full-text
 * recall ranked by relevance (FTS5 bm25), per namespace. A remembered fact is committed before `remember` returns, so it survives the
 * process being killed. Queries are free text: they are turned into a safe MATCH expression,
 * so quotes, `*`, `NEAR`, `-` or parentheses in a user's words never reach FTS5 as syntax.
 *
 * @example
 * const memory = LongTermMemory.open(`${dataDir}/facts.db`);
 * memory.remember("user:42", "prefers answers in Chinese", { source: "chat" });
 * memory.recall("user:42", "which language does the user prefer?"); // [{ id, text, meta, score, at }]
 */
export class LongTermMemory {
  #db: SqliteDatabase;
  #sql;

  private constructor(db: SqliteDatabase) {
    this.#db = db;
    this.#sql = {
      insert: db.query("INSERT INTO facts (namespace, text, meta, at) VALUES (?, ?, ?, ?)"),
      index: db.query("INSERT INTO facts_fts (rowid, body, namespace) VALUES (?, ?, ?)"),
      remove: db.query("DELETE FROM facts WHERE id = ? AND namespace = ?"),
      unindex: db.query("DELETE FROM facts_fts WHERE rowid = ?"),
      count: db.query<{ n: number }>("SELECT count(*) AS n FROM facts WHERE namespace = ?"),
      recall: db.query<{ id: number; text: string; meta: string | null; at: number; rank: number }>(`SELECT f.id, f.text, f.meta, f.at, bm25(facts_fts) AS rank
        FROM facts_fts JOIN facts f ON f.id = facts_fts.rowid
        WHERE facts_fts MATCH ? AND facts_fts.namespace = ? ORDER BY rank, f.at DESC, f.id DESC LIMIT ?`),
    };
  }

  /**
   * Opens (creating if needed) the fact store at `path` (`:memory:` for a throwaway one).
   *
   * @example
   * using memory = LongTermMemory.open("/var/lib/hermes/facts.db");
   */
  static open(path: string): LongTermMemory {
    const db = SqliteDatabase.open(path);
    // WAL with synchronous=NORMAL: a committed fact survives the process being killed.
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;");
    // AUTOINCREMENT: a forgotten id is never handed out again.
    db.exec(`CREATE TABLE IF NOT EXISTS facts (id INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL,
               text TEXT NOT NULL, meta TEXT, at INTEGER NOT NULL);
             CREATE INDEX IF NOT EXISTS facts_namespace ON facts (namespace);
             CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts USING fts5(body, namespace UNINDEXED,
               tokenize = 'porter unicode61 remove_diacritics 2')`);
    return new LongTermMemory(db);
  }

  /**
   * Stores a fact and returns its id.
   *
   * @example
   * const id = memory.remember("project:mesh", "tests use bun:test and never fixed sleeps");
   */
  remember(namespace: string, text: string, meta?: Record<string, unknown>): number {
    checkNamespace(namespace);
    if (typeof text !== "string" || text.trim() === "" || text.length > MAX_FACT_LENGTH) {
      throw invalid(`a fact must be a non-empty string of at most ${MAX_FACT_LENGTH} characters`);
    }
    let metaJson: string | null = null;
    if (meta !== undefined) {
      if (typeof meta !== "object" || meta === null || Array.isArray(meta)) throw invalid("meta must be an object");
      try {
        metaJson = JSON.stringify(meta);
      } catch (error) {
        throw invalid(`meta is not JSON: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return this.#db.transaction(() => {
      const id = Number(this.#sql.insert.run(namespace, text, metaJson, Date.now()).lastInsertRowid);
      this.#sql.index.run(id, indexText(text), namespace);
      return id;
    });
  }

  /**
   * The facts of a namespace most relevant to a free-text query, best first. A query with no
   * words (empty, or only punctuation) recalls nothing.
   *
   * @example
   * memory.recall("user:42", "深色主题", 3)[0]?.text; // "用户喜欢深色主题"
   */
  recall(namespace: string, query: string, limit = 5): Fact[] {
    checkNamespace(namespace);
    const match = toMatchExpression(typeof query === "string" ? query : "");
    const n = Math.min(Math.max(Math.trunc(Number(limit)) || 0, 0), MAX_RECALL);
    if (match === "" || n === 0) return [];
    const rows = this.#sql.recall.all(match, namespace, n);
    return rows.map((r) => ({ id: r.id, text: r.text, meta: r.meta ? JSON.parse(r.meta) : {}, score: -r.rank, at: r.at }));
  }

  /**
   * Deletes a fact; false when the namespace holds no fact with that id.
   *
   * @example
   * memory.forget("user:42", id); // true
   */
  forget(namespace: string, id: number): boolean {
    checkNamespace(namespace);
    return this.#db.transaction(() => {
      if (this.#sql.remove.run(id, namespace).changes === 0) return false;
      this.#sql.unindex.run(id);
      return true;
    });
  }

  /** How many facts a namespace holds. */
  count(namespace: string): number {
    checkNamespace(namespace);
    return this.#sql.count.get(namespace)!.n;
  }

  /** Closes the database. */
  close(): void {
    this.#db.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** CJK runs become their characters plus overlapping bigrams; everything else is left to unicode61. */
function indexText(text: string): string {
  return text.normalize("NFKC").replace(CJK_RUN, (run) => {
    const chars = Array.from(run);
    const pairs = chars.slice(1).map((c, i) => chars[i] + c);
    return ` ${[...chars, ...pairs].join(" ")} `;
  });
}

/**
 * Free text to an FTS5 expression: only runs of letters, digits and marks survive (so no
 * operator, quote, `*`, `:` or parenthesis does), each is double-quoted (so `NEAR`, `AND` and
 * `OR` are plain words), and the terms are OR-ed: bm25 ranks facts matching more of them first.
 * CJK runs are queried as bigrams, a lone character as itself, as they were indexed.
 *
 * @example
 * toMatchExpression('dark "mode" NEAR(x*'); // '"dark" OR "mode" OR "near" OR "x"'
 * toMatchExpression("深色主题");             // '"深色" OR "色主" OR "主题"'
 */
export function toMatchExpression(query: string): string {
  const spaced = query.normalize("NFKC").replace(CJK_RUN, (run) => {
    const chars = Array.from(run);
    return chars.length === 1 ? ` ${run} ` : ` ${chars.slice(1).map((c, i) => chars[i] + c).join(" ")} `;
  });
  const terms = new Set<string>();
  for (const term of spaced.match(TERM) ?? []) {
    terms.add(term.toLowerCase());
    if (terms.size === MAX_QUERY_TERMS) break;
  }
  return [...terms].map((t) => `"${t}"`).join(" OR ");
}

function checkNamespace(namespace: string): void {
  if (typeof namespace !== "string" || namespace === "" || namespace.length > 256) {
    throw invalid("a namespace must be a non-empty string of at most 256 characters");
  }
}

function invalid(reason: string): HermesError {
  return new HermesError(ErrorCode.INVALID_REQUEST, reason, { reason });
}
