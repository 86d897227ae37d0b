import { describe, expect, test } from "bun:test";
import { TopicIndex, topicMatches, validatePattern, validateTopic } from "../../mesh/topics.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { seededRandom } from "../conformance/seeded-random.ts";

/** Reference matcher: plain recursion straight from the definition, slow but obviously right. */
function reference(pattern: string, topic: string): boolean {
  const p = pattern.split(".");
  const t = topic.split(".");
  const m = (i: number, j: number): boolean => {
    if (i === p.length) return j === t.length;
    if (p[i] === "#") return m(i + 1, j) || (j < t.length && m(i, j + 1));
    if (j === t.length) return false;
    return (p[i] === "*" || p[i] === t[j]) && m(i + 1, j + 1);
  };
  return m(0, 0);
}

function errorOf(fn: () => void): HermesError {
  try {
    fn();
  } catch (error) {
    if (error instanceof HermesError) return error;
    throw error;
  }
  throw new Error("expected a HermesError");
}

describe("validation", () => {
  test.each([
    ["", "empty"],
    ["a..b", "segment 2 is empty"],
    [".a", "segment 1 is empty"],
    ["a.", "segment 2 is empty"],
    ["a.b c", "outside [A-Za-z0-9_-]"],
    ["a.é", "outside [A-Za-z0-9_-]"],
    ["task.im*", "must be a whole segment"],
    ["#a", "must be a whole segment"],
    ["**", "must be a whole segment"],
  ])("pattern %p is rejected (%s)", (pattern, reason) => {
    const error = errorOf(() => validatePattern(pattern));
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error.message).toContain(reason);
    expect(String(error.fields.reason)).toContain(reason);
  });

  test.each(["a", "task.*.generate", "#", "#.done", "a.#.b.#", "*.*", "A-b_9.x"])("pattern %p is accepted", (pattern) => {
    expect(() => validatePattern(pattern)).not.toThrow();
  });

  test("topics take no wildcards", () => {
    expect(() => validateTopic("task.image.generate")).not.toThrow();
    expect(errorOf(() => validateTopic("task.*")).message).toContain("wildcards are not allowed");
    expect(errorOf(() => validateTopic("task.#")).code).toBe(ErrorCode.INVALID_REQUEST);
    expect(errorOf(() => validateTopic("a..b")).message).toContain("empty");
  });
});

describe("topicMatches", () => {
  test.each([
    ["task.*.generate", "task.image.generate", true],
    ["task.*.generate", "task.image.x.generate", false],
    ["task.*.generate", "task.generate", false],
    ["task.#", "task", true],
    ["task.#", "task.a", true],
    ["task.#", "task.a.b", true],
    ["task.#", "tasks.a", false],
    ["#.done", "done", true],
    ["#.done", "a.b.done", true],
    ["#.done", "a.b.done.x", false],
    ["#", "anything.at.all", true],
    ["#", "x", true],
    ["a.#.b.#.c", "a.b.c", true],
    ["a.#.b.#.c", "a.x.y.b.z.c", true],
    ["a.#.b.#.c", "a.x.c", false],
    ["*", "a.b", false],
    ["a.b", "a.b", true],
    ["a.b", "a.B", false],
  ] as const)("%p vs %p is %p", (pattern, topic, expected) => {
    expect(topicMatches(pattern, topic)).toBe(expected);
  });
});

const WORDS = ["a", "b", "c"];
function randomPattern(rnd: ReturnType<typeof seededRandom>): string {
  const n = 1 + rnd.int(5);
  return Array.from({ length: n }, () => rnd.pick([...WORDS, "*", "#"])).join(".");
}
function randomTopic(rnd: ReturnType<typeof seededRandom>): string {
  return Array.from({ length: 1 + rnd.int(6) }, () => rnd.pick(WORDS)).join(".");
}

describe("TopicIndex", () => {
  test("the examples of the brief", () => {
    const index = new TopicIndex<string>();
    index.add("task.*.generate", "imager");
    index.add("task.#", "logger");
    index.add("#.done", "closer");
    index.add("#", "all");
    expect(index.match("task.image.generate").sort()).toEqual(["all", "imager", "logger"]);
    expect(index.match("task").sort()).toEqual(["all", "logger"]);
    expect(index.match("a.b.done").sort()).toEqual(["all", "closer"]);
    expect(index.match("task.done").sort()).toEqual(["all", "closer", "logger"]);
  });

  test("a value matched through several patterns is returned once", () => {
    const index = new TopicIndex<string>();
    index.add("a.#", "x");
    index.add("a.*", "x");
    index.add("#.b", "x");
    index.add("a.b", "x");
    expect(index.match("a.b")).toEqual(["x"]);
  });

  test("add is idempotent; remove drops the pair and prunes; unknown pairs are reported", () => {
    const index = new TopicIndex<number>();
    index.add("a.*.c", 1);
    index.add("a.*.c", 1);
    index.add("a.*.c", 2);
    expect(index.size).toBe(2);
    expect(index.remove("a.*.c", 1)).toBe(true);
    expect(index.remove("a.*.c", 1)).toBe(false);
    expect(index.remove("a.x.c", 2)).toBe(false);
    expect(index.match("a.b.c")).toEqual([2]);
    expect(index.remove("a.*.c", 2)).toBe(true);
    expect(index.size).toBe(0);
    expect(index.match("a.b.c")).toEqual([]);
  });

  test("add rejects an invalid pattern with code 2", () => {
    const index = new TopicIndex<string>();
    expect(errorOf(() => index.add("a..b", "x")).code).toBe(ErrorCode.INVALID_REQUEST);
    expect(index.size).toBe(0);
  });

  test("agrees with the reference matcher on random patterns and topics", () => {
    const rnd = seededRandom(0x7091c);
    const patterns = Array.from({ length: 3000 }, () => randomPattern(rnd));
    const index = new TopicIndex<number>();
    patterns.forEach((p, i) => index.add(p, i));
    // Remove a third so pruning is exercised too.
    const removed = new Set<number>();
    for (let i = 0; i < patterns.length; i += 3) {
      expect(index.remove(patterns[i]!, i)).toBe(true);
      removed.add(i);
    }
    for (let k = 0; k < 500; k++) {
      const topic = randomTopic(rnd);
      const expected = patterns.flatMap((p, i) => (!removed.has(i) && reference(p, topic) ? [i] : []));
      expect({ topic, seed: rnd.seed, got: index.match(topic).sort((a, b) => a - b) }).toEqual({ topic, seed: rnd.seed, got: expected });
      for (const p of patterns.slice(0, 60)) expect(topicMatches(p, topic)).toBe(reference(p, topic));
    }
  });

  test("many '#' segments stay cheap (no exponential backtracking)", () => {
    const pattern = Array.from({ length: 30 }, () => "#").join(".") + ".z";
    const topic = Array.from({ length: 40 }, () => "a").join(".");
    const index = new TopicIndex<string>();
    index.add(pattern, "p");
    // Would take astronomically long with naive backtracking; here it returns, with the right answer.
    expect(index.match(topic)).toEqual([]);
    expect(index.match(topic + ".z")).toEqual(["p"]);
    expect(topicMatches(pattern, topic)).toBe(false);
    expect(topicMatches(pattern, topic + ".z")).toBe(true);
  });
});
