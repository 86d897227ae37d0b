import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { SqliteDatabase } from "../actor/sqlite-database.ts";

/**
 * Run statuses: `running` until one of the three ends.
 *
 * @example
 * store.list({ status: RunStatus.RUNNING });
 */
export const RunStatus = { RUNNING: "running", SUCCEEDED: "succeeded", FAILED: "failed", CANCELLED: "cancelled" } as const;
export type RunStatus = (typeof RunStatus)[keyof typeof RunStatus];

/**
 * Node statuses (see workflow-run.ts for the transitions).
 *
 * @example
 * record.status === NodeStatus.RETRY_WAIT; // a retry is waiting for its backoff
 */
export const NodeStatus = {
  PENDING: "pending",
  RUNNING: "running",
  RETRY_WAIT: "retry_wait",
  SUCCEEDED: "succeeded",
  FAILED: "failed",
  SKIPPED: "skipped",
  CANCELLED: "cancelled",
} as const;
export type NodeStatus = (typeof NodeStatus)[keyof typeof NodeStatus];

/** One run as stored. JSON columns come back parsed. */
export interface RunRecord {
  run_id: string;
  workflow: string;
  version: string;
  file: string;
  /** The workflow's YAML text: a resumed run runs exactly what it started with. */
  source: string;
  input: Record<string, unknown>;
  status: RunStatus;
  trace_id: string;
  context_id: string;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
  output: unknown;
  error: Record<string, unknown> | null;
}

/** One node of one run as stored. */
export interface NodeRecord {
  node_id: string;
  status: NodeStatus;
  /** Attempts started in the current round (1 after the first request). */
  attempt: number;
  /** 1, or more after the node was sent back. */
  round: number;
  /** Requests sent for this node over the whole run (all rounds and retries). */
  requests: number;
  /** The request in flight: persisted before it is sent, sent again unchanged on resume. */
  message_id: string | null;
  envelope: Record<string, unknown> | null;
  /** When a retry waits: the time it is due. */
  next_at: number | null;
  started_at: number | null;
  finished_at: number | null;
  result: unknown;
  error: Record<string, unknown> | null;
  /** What the node that sent this one back said (`$.feedback`). */
  feedback: unknown;
}

/** A transition, as the history keeps it. */
export interface TransitionRecord {
  seq: number;
  at: number;
  node_id: string | null;
  status: string;
  attempt: number | null;
  round: number | null;
  message_id: string | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, workflow TEXT NOT NULL, version TEXT NOT NULL, file TEXT NOT NULL, source TEXT NOT NULL,
  input TEXT NOT NULL, status TEXT NOT NULL, trace_id TEXT NOT NULL, context_id TEXT NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, finished_at INTEGER, output TEXT, error TEXT);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status, created_at);
CREATE TABLE IF NOT EXISTS nodes (
  run_id TEXT NOT NULL, node_id TEXT NOT NULL, status TEXT NOT NULL, attempt INTEGER NOT NULL, round INTEGER NOT NULL,
  requests INTEGER NOT NULL, message_id TEXT, envelope TEXT, next_at INTEGER, started_at INTEGER, finished_at INTEGER,
  result TEXT, error TEXT, feedback TEXT, PRIMARY KEY (run_id, node_id));
CREATE TABLE IF NOT EXISTS transitions (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, node_id TEXT, status TEXT NOT NULL,
  attempt INTEGER, round INTEGER, message_id TEXT, PRIMARY KEY (run_id, seq));`;

const RUN_COLUMNS = ["run_id", "workflow", "version", "file", "source", "input", "status", "trace_id", "context_id", "created_at", "updated_at", "finished_at", "output", "error"];
const NODE_COLUMNS = ["run_id", "node_id", "status", "attempt", "round", "requests", "message_id", "envelope", "next_at", "started_at", "finished_at", "result", "error", "feedback"];
const NODE_JSON = ["envelope", "result", "error", "feedback"] as const;
const RUN_JSON = ["input", "output", "error"] as const;

/**
 * Workflow runs in SQLite (WAL; bun:sqlite on Bun, node:sqlite on Deno): one row per run, one
 * per node, and the history of every transition. Each transition is one transaction (the node rows it changes, the run row, a
 * history line), committed before the engine acts on it, so a crash never leaves a state the
 * engine did not reach.
 *
 * @example
 * const store = WorkflowStore.open(`${dir}/data/workflows.db`);
 * store.createRun(run, nodes);
 * store.transition(run.run_id, [{ ...node, status: "running" }]);
 */
export class WorkflowStore {
  #db: SqliteDatabase;
  #q;

  private constructor(db: SqliteDatabase) {
    this.#db = db;
    this.#q = {
      putRun: db.query(upsert("runs", RUN_COLUMNS, ["run_id"])),
      putNode: db.query(upsert("nodes", NODE_COLUMNS, ["run_id", "node_id"])),
      history: db.query("INSERT INTO transitions VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM transitions WHERE run_id = ?), ?, ?, ?, ?, ?, ?)"),
      run: db.query("SELECT * FROM runs WHERE run_id = ?"),
      nodes: db.query("SELECT * FROM nodes WHERE run_id = ? ORDER BY rowid"),
      transitions: db.query<TransitionRecord>("SELECT seq, at, node_id, status, attempt, round, message_id FROM transitions WHERE run_id = ? ORDER BY seq"),
    };
  }

  /** Opens (creating if needed) the store at `path`. */
  static open(path: string): WorkflowStore {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const db = SqliteDatabase.open(path);
    // WAL with synchronous=NORMAL: a committed transaction survives the process being killed.
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;");
    db.exec(SCHEMA);
    return new WorkflowStore(db);
  }

  /** A new run and its nodes, in one transaction. */
  createRun(run: RunRecord, nodes: NodeRecord[]): void {
    this.#db.transaction(() => {
      this.#q.putRun.run(...encode(run, RUN_COLUMNS, RUN_JSON));
      for (const node of nodes) this.#q.putNode.run(...encode({ run_id: run.run_id, ...node }, NODE_COLUMNS, NODE_JSON));
      this.#q.history.run(run.run_id, run.run_id, run.created_at, null, run.status, null, null, null);
    });
  }

  /** Node rows changed by one transition (and the run row when it changed too), with their history lines. */
  transition(runId: string, nodes: NodeRecord[], run?: RunRecord): void {
    const now = Date.now();
    this.#db.transaction(() => {
      for (const node of nodes) {
        this.#q.putNode.run(...encode({ run_id: runId, ...node }, NODE_COLUMNS, NODE_JSON));
        this.#q.history.run(runId, runId, now, node.node_id, node.status, node.attempt, node.round, node.message_id);
      }
      if (run) {
        this.#q.putRun.run(...encode(run, RUN_COLUMNS, RUN_JSON));
        this.#q.history.run(runId, runId, now, null, run.status, null, null, null);
      }
    });
  }

  /** A history line that changes no row (a request sent again after a restart). */
  note(runId: string, nodeId: string, what: string, messageId: string | null): void {
    this.#q.history.run(runId, runId, Date.now(), nodeId, what, null, null, messageId);
  }

  run(runId: string): RunRecord | undefined {
    const row = this.#q.run.get(runId);
    return row ? (decode(row, RUN_JSON) as unknown as RunRecord) : undefined;
  }

  nodes(runId: string): NodeRecord[] {
    return this.#q.nodes.all(runId).map((row) => {
      const { run_id: _, ...node } = decode(row, NODE_JSON);
      return node as unknown as NodeRecord;
    });
  }

  transitions(runId: string): TransitionRecord[] {
    // Spread: node:sqlite's rows have no prototype, and a record should not depend on the runtime.
    return this.#q.transitions.all(runId).map((row) => ({ ...row }));
  }

  /** Runs, newest first, optionally of one status. */
  list(options: { status?: RunStatus; limit?: number } = {}): RunRecord[] {
    const where = options.status ? "WHERE status = ?" : "";
    const args = options.status ? [options.status, options.limit ?? 100] : [options.limit ?? 100];
    const rows = this.#db.query(`SELECT * FROM runs ${where} ORDER BY created_at DESC, rowid DESC LIMIT ?`).all(...args);
    return rows.map((row) => decode(row, RUN_JSON) as unknown as RunRecord);
  }

  close(): void {
    this.#db.close();
  }
}

/** An upsert that keeps the row (and its rowid, the declaration order of nodes) in place; parameters in `columns` order. */
function upsert(table: string, columns: string[], key: string[]): string {
  const updates = columns.filter((c) => !key.includes(c)).map((c) => `${c} = excluded.${c}`);
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) ON CONFLICT (${key.join(", ")}) DO UPDATE SET ${updates.join(", ")}`;
}

/** The record's values in `columns` order, JSON columns as JSON text, for upsert()'s parameters. */
function encode(record: object, columns: readonly string[], json: readonly string[]): Array<string | number | null> {
  return columns.map((key) => {
    const value = (record as Record<string, unknown>)[key];
    return json.includes(key) ? (value === undefined || value === null ? null : JSON.stringify(value)) : ((value ?? null) as string | number | null);
  });
}

function decode(row: Record<string, unknown>, json: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = { ...row };
  for (const key of json) out[key] = typeof row[key] === "string" ? JSON.parse(row[key] as string) : null;
  return out;
}
