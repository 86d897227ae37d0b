import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { LongTermMemory, toMatchExpression } from "../../src/agent/long-term-memory.ts";
import { HermesError } from "../../mesh/errors.ts";
import { spawnBun, tempDir, waitFor } from "../helpers.ts";

const FIXTURE = join(import.meta.dir, "memory-writer-fixture.ts");

describe("LongTermMemory", () => {
  test("recall ranks the more relevant fact first", () => {
    using memory = LongTermMemory.open(":memory:");
    memory.remember("u", "dark chocolate is the user's favourite snack");
    const editor = memory.remember("u", "the user prefers dark mode in the editor", { source: "chat", turn: 3 });
    memory.remember("u", "the build runs on bun");
    const facts = memory.recall("u", "Which editor mode does the user prefer? dark?");
    expect(facts[0]).toMatchObject({ id: editor, text: "the user prefers dark mode in the editor", meta: { source: "chat", turn: 3 } });
    expect(facts.map((f) => f.text)).toContain("dark chocolate is the user's favourite snack");
    for (let i = 1; i < facts.length; i++) expect(facts[i - 1]!.score).toBeGreaterThanOrEqual(facts[i]!.score);
    expect(facts[0]!.score).toBeGreaterThan(facts[1]!.score);
    expect(Math.abs(facts[0]!.at - Date.now())).toBeLessThan(60_000);
    expect(memory.recall("u", "dark", 1)).toHaveLength(1);
    expect(memory.recall("u", "snack")[0]!.meta).toEqual({});
  });

  test("namespaces are isolated", () => {
    using memory = LongTermMemory.open(":memory:");
    const a = memory.remember("alice", "likes tea");
    memory.remember("bob", "likes tea too");
    memory.remember("bob", "likes coffee");
    expect(memory.recall("alice", "tea").map((f) => f.id)).toEqual([a]);
    expect(memory.recall("alice", "coffee")).toEqual([]);
    expect([memory.count("alice"), memory.count("bob"), memory.count("carol")]).toEqual([1, 2, 0]);
    expect(memory.forget("bob", a)).toBe(false); // wrong namespace
    expect(memory.forget("alice", a)).toBe(true);
    expect(memory.recall("alice", "tea")).toEqual([]);
    expect(memory.forget("alice", a)).toBe(false);
    // Ids are never reused after a forget.
    expect(memory.remember("alice", "likes tea again")).toBeGreaterThan(a);
  });

  test("hostile queries never throw and are never FTS5 syntax", () => {
    using memory = LongTermMemory.open(":memory:");
    memory.remember("n", 'the "near" operator and star * in (parentheses) - minus');
    const hostile = [
      "", "   ", '"', '""', "'", "*", "dark*", "NEAR", "NEAR(a b, 3)", "a NEAR/2 b", "-", "-dark", "NOT", "AND", "OR",
      "a OR", "(", ")", "((a)", "body:secret", "namespace:n", "^start", "+", "{a b}: c", "a\0b", "\u0301", "😀",
      "'; DROP TABLE facts; --", '" OR 1=1 --', "x".repeat(10_000), Array.from({ length: 500 }, (_, i) => `w${i}`).join(" "),
    ];
    for (const query of hostile) expect(() => memory.recall("n", query)).not.toThrow();
    expect(memory.recall("n", "NEAR")).toHaveLength(1);
    expect(memory.recall("n", "(parentheses)")).toHaveLength(1);
    expect(memory.recall("n", "")).toEqual([]);
    expect(memory.recall("n", "*")).toEqual([]);
    expect(memory.recall("n", undefined as unknown as string)).toEqual([]);
    expect(memory.count("n")).toBe(1);
    // Every term is a quoted run of letters, digits or marks.
    for (const query of hostile) {
      const expr = toMatchExpression(query);
      if (expr !== "") for (const part of expr.split(" OR ")) expect(part).toMatch(/^"[\p{L}\p{N}\p{M}]+"$/u);
    }
  });

  test("Chinese facts are recalled by Chinese queries, two-character words and single characters included", () => {
    using memory = LongTermMemory.open(":memory:");
    const theme = memory.remember("zh", "用户喜欢深色主题");
    memory.remember("zh", "项目使用 Bun 运行测试");
    memory.remember("zh", "猫是用户的宠物");
    expect(memory.recall("zh", "用户喜欢什么主题？")[0]!.id).toBe(theme);
    expect(memory.recall("zh", "主题").map((f) => f.id)).toEqual([theme]);
    expect(memory.recall("zh", "深色主题")[0]!.id).toBe(theme);
    expect(memory.recall("zh", "猫")[0]!.text).toBe("猫是用户的宠物");
    expect(memory.recall("zh", "测试 bun")[0]!.text).toBe("项目使用 Bun 运行测试");
    expect(memory.recall("zh", "咖啡")).toEqual([]);
  });

  test("bad input is code 2", () => {
    using memory = LongTermMemory.open(":memory:");
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const f of [
      () => memory.remember("", "x"),
      () => memory.remember("n", "   "),
      () => memory.remember("n", "x", cyclic),
      () => memory.remember("n", "x", [] as unknown as Record<string, unknown>),
      () => memory.recall("", "x"),
    ]) {
      try {
        f();
        throw new Error("expected a HermesError");
      } catch (error) {
        expect(error instanceof HermesError && error.code).toBe(2);
      }
    }
  });

  test("facts survive closing and reopening the file", () => {
    using dir = tempDir();
    const path = join(dir.path, "facts.db");
    const first = LongTermMemory.open(path);
    const id = first.remember("p", "the deploy key rotates every ninety days", { by: "ops" });
    first.remember("p", "another fact");
    first.forget("p", id + 1);
    first.close();
    using again = LongTermMemory.open(path);
    expect(again.count("p")).toBe(1);
    expect(again.recall("p", "when does the deploy key rotate")[0]).toMatchObject({ id, meta: { by: "ops" } });
  });

  test("facts committed by a writer killed with SIGKILL are there after reopening", async () => {
    using dir = tempDir();
    const path = join(dir.path, "facts.db");
    let committed: number[] = [];
    {
      await using writer = spawnBun(FIXTURE, [path]);
      await waitFor(() => writer.lines.length >= 200, "200 committed facts", 20_000);
      writer.proc.kill("SIGKILL");
      await writer.proc.exited;
      expect(writer.proc.signalCode).toBe("SIGKILL");
      committed = writer.lines.map((l) => Number(/^committed (\d+)$/.exec(l)![1]));
    }
    using memory = LongTermMemory.open(path);
    expect(memory.count("crash")).toBeGreaterThanOrEqual(committed.length);
    const last = committed.at(-1)!;
    const recalled = memory.recall("crash", `fact number ${last} writer`, 100);
    expect(recalled.some((f) => f.id === last && f.meta.i === last)).toBe(true);
    const db = new Database(path, { readonly: true });
    const ids = new Set((db.query("SELECT id FROM facts").all() as Array<{ id: number }>).map((r) => r.id));
    expect(committed.every((id) => ids.has(id))).toBe(true);
    expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    db.close();
    // Still writable.
    expect(memory.remember("crash", "after the crash")).toBeGreaterThan(last);
  });
});
