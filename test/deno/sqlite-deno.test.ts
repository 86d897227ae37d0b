/**
 * One durable store for both runtimes (issue 14): SqliteDatabase runs node:sqlite on Deno as
 * bun:sqlite runs on Bun, and a DurableStore or LongTermMemory file written by the real Deno
 * binary (the `deno` npm dependency) is read by Bun, and the other way round. With no Deno
 * binary these tests fail, saying how to install it: they never skip.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { DurableStore } from "../../src/actor/durable-store.ts";
import { LongTermMemory } from "../../src/agent/long-term-memory.ts";
import { ErrorCode } from "../../mesh/errors.ts";
import { createLogger } from "../../mesh/logger.ts";
import { openDisk, tmpfsUnavailable } from "../disk-full.ts";
import { denoBinary, tempDir } from "../helpers.ts";
import { handle, view } from "./durable-store-fixture.ts";
import { recalled } from "./long-term-memory-fixture.ts";
import { sqliteBehaviour } from "./sqlite-behaviour.ts";

/**
 * Runs `fixture` on Deno to its end and returns its last stdout line as JSON. Permissions: read
 * anywhere (sources, node_modules), write only in `writable`, the environment (the store's
 * test-only settings, msgpackr's). No flag for node_modules: Deno finds the package.json at the
 * root and resolves npm imports from its node_modules (Deno 2's default with a package.json).
 * Not spawnDeno: its lines may still be on their way when the process exits; this reads
 * stdout to its end.
 */
async function runOnDeno(fixture: string, writable: string, args: string[]): Promise<Record<string, any>> {
  const command = [denoBinary(), "run", "--no-prompt", "--quiet", "--allow-read", `--allow-write=${writable}`, "--allow-env", join(import.meta.dir, fixture), ...args];
  const proc = Bun.spawn(command, { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  try {
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`${fixture} exited with ${code} on Deno:\n${err}${out}`);
    return JSON.parse(out.trim().split("\n").at(-1)!);
  } finally {
    if (proc.exitCode === null) proc.kill("SIGKILL");
  }
}

describe("SqliteDatabase on Deno (node:sqlite)", () => {
  test("behaves as on Bun (bun:sqlite): rows, bindings, transactions, errors with SQLite's codes, a full database", async () => {
    using denoDir = tempDir("hm-sqlite-deno-");
    using bunDir = tempDir("hm-sqlite-bun-");
    const onDeno = await runOnDeno("sqlite-behaviour-fixture.ts", denoDir.path, [denoDir.path]);
    const onBun = sqliteBehaviour(bunDir.path);
    expect([onDeno.driver, onBun.driver]).toEqual(["node:sqlite", "bun:sqlite"]);
    // The points the stores rely on, spelled out; then everything else must match too.
    expect(onDeno.full).toEqual({ name: "SQLiteError", code: "SQLITE_FULL", errno: 13, message: "database or disk is full" });
    expect(onDeno.fullInTransaction).toMatchObject({ code: "SQLITE_FULL" });
    expect(onDeno.fullWroteNothing).toBe(true);
    expect(onDeno.constraint).toMatchObject({ code: "SQLITE_CONSTRAINT_UNIQUE", errno: 2067 });
    expect(onDeno.row).toEqual({ id: 1, v: 1, type: "integer", blob: "Uint8Array", bytes: [1, 2, 3] });
    expect(onDeno.binds).toMatchObject({ "7": "integer", "1.5": "real", "2n^60": "integer" });
    expect(onDeno.missing).toBe("undefined");
    expect(onDeno.keys).toEqual(["a", "b", "d"]);
    expect(onDeno.closedTwice).toBe("no error");
    expect({ ...onDeno, driver: "" }).toEqual({ ...onBun, driver: "" });
  }, 30_000);
});

describe("a DurableStore written on Deno", () => {
  test("keeps the handled message's answer, its kv writes and its outbox row across a reopen, and Bun reads the same", async () => {
    using dir = tempDir("hm-durable-deno-");
    const path = join(dir.path, "ledger.db");
    const deno = await runOnDeno("durable-store-fixture.ts", dir.path, [path, "commit", "1"]);
    const { request, sent } = deno.ids as { request: string; sent: string };
    const expected = {
      answers: { [request]: { state: "done", type: "response", reply_to: request, payload: { ok: true, n: 1 } } },
      state: {
        count: 1,
        "entry:1": { n: 1, at: { date: "1970-01-01T00:00:01.000Z" }, tags: { set: ["a", "n1"] }, bytes: { bytes: [1, 255] }, pad: 0 },
      },
      outbox: [{ destination: "audit", message_id: sent, payload: { audited: 1 } }],
      rows: {
        // Integers stay INTEGER although node:sqlite binds numbers as REAL: the adapter binds them as integers.
        dedupe: [{ message_id: request, at_type: "integer", answer_type: "blob" }],
        outbox: [{ message_id: sent, destination: "audit", at_type: "integer", envelope_type: "blob" }],
        kv: ["count", "entry:1"],
        journal: "wal",
      },
    };
    expect(deno).toEqual({ ids: { request, sent }, driver: "node:sqlite", ...expected });

    // The same file, opened by Bun: the same answer, state and outbox.
    expect(view(path, [request])).toEqual({ driver: "bun:sqlite", ...expected });
    const store = DurableStore.open(path, { log: createLogger({}, () => {}) });
    let second: { request: string; sent: string };
    try {
      expect(store.lookup(request)?.answer?.payload).toEqual({ ok: true, n: 1 });
      second = handle(store, 2);
      store.delivered(sent, "audit");
    } finally {
      store.close();
    }

    // And back on Deno: what Bun committed and acknowledged.
    const again = await runOnDeno("durable-store-fixture.ts", dir.path, [path, "view", request, second.request]);
    expect(again.driver).toBe("node:sqlite");
    expect(again.answers[second.request]).toEqual({ state: "done", type: "response", reply_to: second.request, payload: { ok: true, n: 2 } });
    expect(again.state.count).toBe(2);
    expect(again.outbox).toEqual([{ destination: "audit", message_id: second.sent, payload: { audited: 2 } }]);
  }, 30_000);

  const noTmpfs = tmpfsUnavailable();
  test.skipIf(noTmpfs !== undefined)(`refuses a commit on a full disk with code 6, and commits again once there is space (tmpfs${noTmpfs ? `; skipped: ${noTmpfs}` : ""})`, async () => {
    using disk = openDisk("tmpfs");
    const path = join(disk.dir, "ledger.db");
    const deno = await runOnDeno("durable-store-fixture.ts", disk.dir, [path, "full", disk.filler!]);
    expect(deno.refusal).toMatchObject({ code: ErrorCode.RESOURCE_EXHAUSTED, fields: { resource: "disk" } });
    expect(deno.refusal.fields.sqlite_code).toBe("SQLITE_FULL");
    expect(deno.refusal.detail).toBe("ledger.db cannot commit: database or disk is full");
    expect(deno.warnings).toEqual([
      "durable store cannot commit: calls are refused (code 6 on a full disk) and recorded nowhere until it can",
      "durable store commits again",
    ]);
    // Request 2 was refused, then committed whole: both answers, the last state, two outbox rows.
    expect(Object.values(deno.answers).map((a: any) => [a.state, a.payload.n])).toEqual([["done", 1], ["done", 2]]);
    expect(deno.state.count).toBe(2);
    expect(deno.outbox.map((o: any) => o.payload)).toEqual([{ audited: 1 }, { audited: 2 }]);
  }, 30_000);
});

describe("a LongTermMemory written on Deno (FTS5)", () => {
  test("recalls its facts after a reopen, ranked as on Bun, and Bun adds to the same file", async () => {
    using dir = tempDir("hm-memory-deno-");
    const path = join(dir.path, "facts.db");
    const deno = await runOnDeno("long-term-memory-fixture.ts", dir.path, [path, "remember"]);
    expect(deno).toMatchObject({ ids: [1, 2, 3, 4], temporary: 5, forgotten: true, forgottenAgain: false, driver: "node:sqlite", indexed: 4 });
    expect(deno.counts).toEqual({ "user:42": 3, "user:7": 1 });
    const best = (query: string) => deno.recalls.find((r: any) => r.query === query).facts.map((f: any) => f.text);
    expect(best("which language does the user prefer?")).toEqual(["prefers answers in Chinese"]);
    expect(best("深色主题")).toEqual(["用户喜欢深色主题"]);
    expect(best("cafe")).toEqual(["drinks a café au lait every morning"]);
    expect(best('answers NEAR("x*')).toEqual(["prefers answers in Chinese"]);
    expect(best("temporary")).toEqual([]);
    expect(deno.recalls.find((r: any) => r.query === "cafe").facts[0].meta).toEqual({ source: "profile", confidence: 0.9 });

    // Bun reads the same facts with the same ranks and scores.
    const { ids: _, temporary: __, forgotten: ___, forgottenAgain: ____, ...read } = deno;
    expect(recalled(path)).toEqual({ ...read, driver: "bun:sqlite" });

    // Bun remembers one more: a new id (the forgotten 5 is never handed out again), found on Deno.
    const memory = LongTermMemory.open(path);
    let added: number;
    try {
      added = memory.remember("user:42", "another temporary note");
    } finally {
      memory.close();
    }
    expect(added).toBe(6);
    const after = await runOnDeno("long-term-memory-fixture.ts", dir.path, [path, "recall"]);
    expect(after.recalls.find((r: any) => r.query === "temporary").facts.map((f: any) => [f.id, f.text])).toEqual([[6, "another temporary note"]]);
  }, 30_000);
});
