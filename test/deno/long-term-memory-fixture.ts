/**
 * A LongTermMemory (FTS5) in another process (run on Deno by sqlite-deno.test.ts), printing one
 * JSON line. Usage: `<db path> remember`: remembers FACTS (and forgets one more), closes,
 * reopens and prints the ids with what it recalls (`recalled`). `<db path> recall`: prints what
 * it recalls.
 */
import { LongTermMemory } from "../../src/agent/long-term-memory.ts";
import { SqliteDatabase } from "../../src/actor/sqlite-database.ts";

/** Facts of two namespaces: English, CJK (indexed as bigrams) and diacritics (removed by unicode61). */
export const FACTS: Array<[namespace: string, text: string, meta?: Record<string, unknown>]> = [
  ["user:42", "prefers answers in Chinese", { source: "chat" }],
  ["user:42", "用户喜欢深色主题"],
  ["user:42", "drinks a café au lait every morning", { source: "profile", confidence: 0.9 }],
  ["user:7", "prefers answers in English"],
];

/** The questions recalled, some of them FTS5 syntax that must stay plain words. */
export const QUESTIONS: Array<[namespace: string, query: string]> = [
  ["user:42", "which language does the user prefer?"],
  ["user:42", "深色主题"],
  ["user:42", "cafe"],
  ["user:42", 'answers NEAR("x*'],
  ["user:7", "prefers answers"],
  ["user:42", "temporary"],
];

/** What the memory at `path` recalls for QUESTIONS, its counts, and the driver that read it. */
export function recalled(path: string): Record<string, unknown> {
  const memory = LongTermMemory.open(path);
  let seen: Record<string, unknown>;
  try {
    seen = {
      recalls: QUESTIONS.map(([namespace, query]) => ({
        query,
        // Scores rounded: two builds of SQLite may differ in the last bits of a double.
        facts: memory.recall(namespace, query).map((fact) => ({ id: fact.id, text: fact.text, meta: fact.meta, score: Number(fact.score.toPrecision(12)) })),
      })),
      counts: { "user:42": memory.count("user:42"), "user:7": memory.count("user:7") },
    };
  } finally {
    memory.close();
  }
  const db = SqliteDatabase.open(path);
  try {
    return { ...seen, driver: db.driver, indexed: db.query<{ n: number }>("SELECT count(*) AS n FROM facts_fts").get()?.n };
  } finally {
    db.close();
  }
}

if (import.meta.main) {
  const [path, mode] = process.argv.slice(2);
  if (!path || (mode !== "remember" && mode !== "recall")) throw new Error("usage: long-term-memory-fixture.ts <db path> remember | recall");
  let result: Record<string, unknown> = {};
  if (mode === "remember") {
    const memory = LongTermMemory.open(path);
    try {
      const ids = FACTS.map(([namespace, text, meta]) => memory.remember(namespace, text, meta));
      const temporary = memory.remember("user:42", "a temporary note");
      result = { ids, temporary, forgotten: memory.forget("user:42", temporary), forgottenAgain: memory.forget("user:42", temporary) };
    } finally {
      memory.close();
    }
  }
  console.log(JSON.stringify({ ...result, ...recalled(path) }));
}
