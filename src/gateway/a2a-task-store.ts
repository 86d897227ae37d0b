/**
 * The A2A tasks of the gateway in SQLite (`<mesh dir>/data/a2a-tasks.db`): they outlive a
 * gateway restart, so GetTask and ListTasks still answer. A TaskStore of `@a2a-js/sdk`.
 */
import { Buffer } from "node:buffer";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { Message, Task, TaskState, type ListTasksRequest, type ListTasksResponse, type Part } from "@a2a-js/sdk";
import type { ServerCallContext, TaskStore } from "@a2a-js/sdk/server";
import { RequestMalformedError } from "@a2a-js/sdk/errors";
import { SqliteDatabase } from "../actor/sqlite-database.ts";

/** How much the store keeps. */
export interface TaskStoreLimits {
  /** Tasks kept; past it the oldest finished ones go first. Default 10,000. */
  maxTasks?: number;
  /** Messages kept in a task's history: its first (the request) and the latest. Default 100. */
  maxHistory?: number;
  /**
   * Bytes (of JSON) the history keeps after its first message: the latest messages that fit.
   * Default 256 KiB.
   */
  maxHistoryBytes?: number;
  /**
   * Bytes (of JSON) of one stored message, in the history or the status: a bigger one keeps its
   * ids and metadata, and its parts become one text part saying what was left out. Default 64 KiB.
   */
  maxMessageBytes?: number;
}

/** States in which a task is being worked on by a request of this gateway. */
const RUNNING = [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING];
const FINISHED = [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED];
/** How many saves between two looks at the row count. */
const EVICTION_EVERY = 64;

interface Row {
  json: string;
  updated_at: number;
  id: string;
}

/**
 * Tasks as their A2A JSON (`Task.toJSON`), one row each, with the columns ListTasks filters
 * on. Bounded: at most `maxTasks` rows (the oldest finished tasks are evicted first, then the
 * oldest waiting ones, never a running one), and per task at most `maxHistory` messages in
 * `maxHistoryBytes` after the first, each message at most `maxMessageBytes`: a request with
 * thousands of 16 MiB progress messages stays one row of its artifacts plus about 400 KiB.
 * Artifacts (the answer) are kept whole. Not scoped by user or tenant: the gateway has one
 * token, and whoever holds it sees every task.
 *
 * @example
 * const store = SqliteTaskStore.open(join(dir, "data", "a2a-tasks.db"));
 * const handler = new DefaultRequestHandler(card, store, executor);
 */
export class SqliteTaskStore implements TaskStore {
  readonly #db: SqliteDatabase;
  readonly #maxTasks: number;
  readonly #maxHistory: number;
  readonly #maxHistoryBytes: number;
  readonly #maxMessageBytes: number;
  #saves = 0;

  private constructor(db: SqliteDatabase, limits: TaskStoreLimits) {
    this.#db = db;
    this.#maxTasks = limits.maxTasks ?? 10_000;
    this.#maxHistory = Math.max(2, limits.maxHistory ?? 100);
    this.#maxHistoryBytes = limits.maxHistoryBytes ?? 256 * 1024;
    this.#maxMessageBytes = limits.maxMessageBytes ?? 64 * 1024;
    db.exec(`
      PRAGMA journal_mode = WAL;
      PRAGMA synchronous = NORMAL;
      CREATE TABLE IF NOT EXISTS a2a_tasks (
        id TEXT PRIMARY KEY,
        context_id TEXT NOT NULL,
        state INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        json TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS a2a_tasks_by_time ON a2a_tasks (updated_at, id);
      CREATE INDEX IF NOT EXISTS a2a_tasks_by_context ON a2a_tasks (context_id, updated_at);
    `);
  }

  /**
   * Opens (creating it and its directory) the store at `path`; `:memory:` for one that ends with the process.
   *
   * @example
   * const store = SqliteTaskStore.open(":memory:", { maxTasks: 100 });
   */
  static open(path: string, limits: TaskStoreLimits = {}): SqliteTaskStore {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    return new SqliteTaskStore(SqliteDatabase.open(path), limits);
  }

  async save(task: Task, _context?: ServerCallContext): Promise<void> {
    this.saveNow(task);
  }

  /** save() without the promise, for the gateway's own bookkeeping (recovery at start). */
  saveNow(task: Task): void {
    const kept = { ...task, history: this.#history(task.history ?? []), status: task.status && { ...task.status, message: task.status.message && this.#bounded(task.status.message).message } };
    const updatedAt = Date.parse(task.status?.timestamp ?? "") || Date.now();
    this.#db
      .query("INSERT INTO a2a_tasks (id, context_id, state, updated_at, json) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET context_id = excluded.context_id, state = excluded.state, updated_at = excluded.updated_at, json = excluded.json")
      .run(task.id, task.contextId ?? "", task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED, updatedAt, JSON.stringify(Task.toJSON(kept)));
    if (++this.#saves % EVICTION_EVERY === 0) this.#evict();
  }

  async load(taskId: string, _context?: ServerCallContext): Promise<Task | undefined> {
    return this.loadNow(taskId);
  }

  /** A fresh copy of the task (the SDK changes what it loads), or undefined. */
  loadNow(taskId: string): Task | undefined {
    const row = this.#db.query<Row>("SELECT json FROM a2a_tasks WHERE id = ?").get(taskId);
    return row === undefined ? undefined : Task.fromJSON(JSON.parse(row.json));
  }

  /**
   * Tasks newest first (by the time of their status), filtered by context, state and time,
   * a page at a time: the page token is the position after the last task of the page.
   */
  async list(params: ListTasksRequest, _context?: ServerCallContext): Promise<ListTasksResponse> {
    const where: string[] = [];
    const args: Array<string | number> = [];
    if (params.contextId) where.push("context_id = ?"), args.push(params.contextId);
    if (params.status !== undefined && params.status !== TaskState.TASK_STATE_UNSPECIFIED) where.push("state = ?"), args.push(params.status);
    // The spec's "greater than or equal": a task updated at that very millisecond is listed.
    if (params.statusTimestampAfter) where.push("updated_at >= ?"), args.push(Date.parse(params.statusTimestampAfter));
    const filter = where.length ? `WHERE ${where.join(" AND ")}` : "";
    const totalSize = this.#db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM a2a_tasks ${filter}`).get(...args)?.n ?? 0;
    const pageSize = params.pageSize ?? 50;
    const page = [...where];
    const pageArgs = [...args];
    if (params.pageToken) {
      const cursor = decodeCursor(params.pageToken);
      page.push("(updated_at < ? OR (updated_at = ? AND id < ?))");
      pageArgs.push(cursor.at, cursor.at, cursor.id);
    }
    const rows = this.#db
      .query<Row>(`SELECT id, updated_at, json FROM a2a_tasks ${page.length ? `WHERE ${page.join(" AND ")}` : ""} ORDER BY updated_at DESC, id DESC LIMIT ?`)
      .all(...pageArgs, pageSize + 1);
    const more = rows.length > pageSize;
    const shown = rows.slice(0, pageSize);
    const tasks = shown.map((row) => {
      const task = Task.fromJSON(JSON.parse(row.json));
      if (!params.includeArtifacts) task.artifacts = [];
      return task;
    });
    const last = shown[shown.length - 1];
    return { tasks, nextPageToken: more && last ? encodeCursor(last.updated_at, last.id) : "", pageSize, totalSize };
  }

  /** Tasks a request of the gateway was working on (submitted or working): after a restart, nobody is. */
  interrupted(): Task[] {
    const rows = this.#db.query<Row>(`SELECT json FROM a2a_tasks WHERE state IN (${RUNNING.join(", ")}) LIMIT 100000`).all();
    return rows.map((row) => Task.fromJSON(JSON.parse(row.json)));
  }

  /** How many tasks are stored. */
  get size(): number {
    return this.#db.query<{ n: number }>("SELECT COUNT(*) AS n FROM a2a_tasks").get()?.n ?? 0;
  }

  close(): void {
    this.#db.close();
  }

  /** The first message (the request), then the latest ones within `maxHistory` and `maxHistoryBytes`, each bounded. */
  #history(history: readonly Message[]): Message[] {
    if (history.length === 0) return [];
    const kept: Message[] = [];
    let budget = this.#maxHistoryBytes;
    for (let i = history.length - 1; i >= 1 && kept.length < this.#maxHistory - 1; i--) {
      const { message, bytes } = this.#bounded(history[i]!);
      if (bytes > budget) break;
      budget -= bytes;
      kept.push(message);
    }
    return [this.#bounded(history[0]!).message, ...kept.reverse()];
  }

  /** The message, or past `maxMessageBytes` the same message with one text part in place of its parts; and its size. */
  #bounded(message: Message): { message: Message; bytes: number } {
    const bytes = Buffer.byteLength(JSON.stringify(Message.toJSON(message)));
    if (bytes <= this.#maxMessageBytes) return { message, bytes };
    const note: Part = {
      content: { $case: "text", value: `(${bytes} bytes of this message were not kept: the task store keeps at most ${this.#maxMessageBytes} per message; the answer is in the task's artifact)` },
      metadata: undefined, filename: "", mediaType: "text/plain",
    };
    const stub = { ...message, parts: [note] };
    return { message: stub, bytes: Buffer.byteLength(JSON.stringify(Message.toJSON(stub))) };
  }

  /** Down to `maxTasks`: finished tasks first, then waiting ones (auth required), oldest first; running ones stay. */
  #evict(): void {
    const excess = this.size - this.#maxTasks;
    if (excess <= 0) return;
    this.#db
      .query(`DELETE FROM a2a_tasks WHERE id IN (SELECT id FROM a2a_tasks WHERE state NOT IN (${RUNNING.join(", ")}) ORDER BY state IN (${FINISHED.join(", ")}) DESC, updated_at ASC LIMIT ?)`)
      .run(excess);
  }
}

function encodeCursor(at: number, id: string): string {
  return Buffer.from(`${at}|${id}`).toString("base64url");
}

function decodeCursor(token: string): { at: number; id: string } {
  const text = Buffer.from(token, "base64url").toString("utf8");
  const bar = text.indexOf("|");
  const at = Number(text.slice(0, bar));
  if (bar < 1 || !Number.isSafeInteger(at)) throw new RequestMalformedError(`pageToken '${token}' is not one this gateway gave`);
  return { at, id: text.slice(bar + 1) };
}
