/**
 * A DurableStore in another process (run on Deno by sqlite-deno.test.ts), printing one JSON
 * line. Usage: `<db path> commit <n>`: commits the handling of request n (its answer, two kv
 * writes, one outbox message), closes, reopens and prints what it finds (`view`) with the ids
 * it made. `<db path> view <message id>...`: prints what it finds. `<db path> full <filler>`:
 * on a tmpfs, commits request 1, fills the disk through `filler`, has request 2 refused, frees
 * the disk, commits request 2, and prints the refusal, the warnings and what it finds.
 */
import { rmSync } from "node:fs";
import { DurableStore } from "../../src/actor/durable-store.ts";
import { SqliteDatabase } from "../../src/actor/sqlite-database.ts";
import { createReply, createRequest, MessageType, type Envelope } from "../../mesh/envelope.ts";
import { createLogger, type Logger } from "../../mesh/logger.ts";
import { HermesError } from "../../mesh/errors.ts";
import { fillUp } from "../disk-full.ts";

/** The messages of request n: the request, its answer, and what handling it sends to "audit". */
export function messagesOf(n: number): { request: Envelope; answer: Envelope; sent: Envelope } {
  const request = createRequest("client", { target_agent: "ledger" }, { n });
  return {
    request,
    answer: createReply(MessageType.RESPONSE, request, "ledger", { ok: true, n }),
    sent: createRequest("ledger", { target_agent: "audit" }, { audited: n }),
  };
}

/** Commits request n's handling as the actor runtime does: begin, commit before the answer goes, complete. */
export function handle(store: DurableStore, n: number, pad = ""): { request: string; sent: string } {
  const { request, answer, sent } = messagesOf(n);
  const writes = new Map<string, unknown>([
    ["count", n],
    [`entry:${n}`, { n, at: new Date(n * 1000), tags: new Set(["a", `n${n}`]), bytes: new Uint8Array([n, 255]), pad }],
  ]);
  store.begin(request.message_id);
  store.commit(request.message_id, { writes, outbox: [{ destination: "audit", envelope: sent }] }, answer);
  store.complete(request.message_id, answer);
  return { request: request.message_id, sent: sent.message_id };
}

/** msgpackr's richer types as JSON can show them. */
function plain(value: unknown): unknown {
  if (value instanceof Date) return { date: value.toISOString() };
  if (value instanceof Set) return { set: [...value].map(plain) };
  if (value instanceof Uint8Array) return { bytes: Array.from(value) };
  if (typeof value === "bigint") return { bigint: String(value) };
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === "pad" ? (v as string).length : plain(v)]));
  return value;
}

/**
 * What the store at `path` holds, through the store (answers of `requests`, state, outbox) and
 * as rows (SQLite's types of what was bound), with the driver that read it.
 */
export function view(path: string, requests: string[]): Record<string, unknown> {
  const store = DurableStore.open(path, { log: createLogger({}, () => {}) });
  let seen: Record<string, unknown>;
  try {
    seen = {
      answers: Object.fromEntries(
        requests.map((id) => {
          const entry = store.lookup(id);
          return [id, { state: entry?.state, type: entry?.answer?.message_type, reply_to: entry?.answer?.correlation_id, payload: entry?.answer?.payload }];
        }),
      ),
      state: Object.fromEntries(store.keys().map((key) => [key, plain(store.get(key))])),
      outbox: store.pendingOutbox().map(({ destination, envelope }) => ({ destination, message_id: envelope.message_id, payload: envelope.payload })),
    };
  } finally {
    store.close();
  }
  const db = SqliteDatabase.open(path);
  try {
    return {
      ...seen,
      driver: db.driver,
      rows: {
        dedupe: db.query("SELECT message_id, typeof(at) AS at_type, typeof(answer) AS answer_type FROM dedupe ORDER BY at, message_id").all().map((row) => ({ ...row })),
        outbox: db.query("SELECT message_id, destination, typeof(at) AS at_type, typeof(envelope) AS envelope_type FROM outbox ORDER BY at, rowid").all().map((row) => ({ ...row })),
        kv: db.query<{ key: string }>("SELECT key FROM kv ORDER BY key").all().map((row) => row.key),
        journal: db.query("PRAGMA journal_mode").get()?.journal_mode,
      },
    };
  } finally {
    db.close();
  }
}

/** The full-disk run: what the refusal was, what was warned, and what is stored after the disk is freed. */
function onFullDisk(path: string, filler: string): Record<string, unknown> {
  const warnings: string[] = [];
  const log: Logger = createLogger({}, (line) => warnings.push(JSON.parse(line).msg));
  const store = DurableStore.open(path, { log });
  const pad = "v".repeat(6000);
  const ids: string[] = [];
  let refusal: unknown;
  try {
    ids.push(handle(store, 1, pad).request);
    fillUp(filler);
    try {
      handle(store, 2, pad);
    } catch (error) {
      refusal = error instanceof HermesError ? { code: error.code, fields: error.fields, detail: error.message } : { other: String(error) };
    }
    rmSync(filler);
    ids.push(handle(store, 2, pad).request);
  } finally {
    store.close();
  }
  return { refusal, warnings, ...view(path, ids) };
}

if (import.meta.main) {
  const [path, mode, ...rest] = process.argv.slice(2);
  if (!path || !mode) throw new Error("usage: durable-store-fixture.ts <db path> commit <n> | view <id>... | full <filler>");
  let result: Record<string, unknown>;
  if (mode === "commit") {
    const store = DurableStore.open(path, { log: createLogger({}, () => {}) });
    let ids: { request: string; sent: string };
    try {
      ids = handle(store, Number(rest[0]));
    } finally {
      store.close();
    }
    result = { ids, ...view(path, [ids.request]) };
  } else if (mode === "view") {
    result = view(path, rest);
  } else {
    result = onFullDisk(path, rest[0]!);
  }
  console.log(JSON.stringify(result));
}
