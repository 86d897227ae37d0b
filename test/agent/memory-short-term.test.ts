import { describe, expect, test } from "bun:test";
import type { ChatMessage } from "../../src/agent/chat-types.ts";
import { isSummary, ShortTermMemory, SUMMARY_MARKER, type Summariser } from "../../src/agent/short-term-memory.ts";
import { HermesError } from "../../mesh/errors.ts";
import { waitFor } from "../helpers.ts";

/** A summariser the test answers by hand: each call waits until resolved or rejected. */
function fakeSummariser() {
  const calls: Array<{ messages: ChatMessage[]; resolve(summary: string): void; reject(error: Error): void }> = [];
  const summarise: Summariser = (messages) => {
    const { promise, resolve, reject } = Promise.withResolvers<string>();
    calls.push({ messages, resolve, reject });
    return promise;
  };
  return { calls, summarise };
}

const msg = (i: number): ChatMessage => ({ role: i % 2 ? "user" : "assistant", content: `m${i}` });
const contents = (messages: ChatMessage[]) => messages.map((m) => m.content);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => `m${from + k}`);

function fill(memory: ShortTermMemory, ctx: string, from: number, to: number): void {
  for (let i = from; i <= to; i++) memory.add(ctx, msg(i));
}

describe("ShortTermMemory", () => {
  test("without a summariser it is a sliding window of `limit` messages", () => {
    const memory = new ShortTermMemory({ limit: 50 });
    fill(memory, "c", 1, 60);
    expect(contents(memory.messages("c"))).toEqual(range(11, 60));
    expect(memory.stats()).toMatchObject({ contexts: 1, messages: 50, dropped: 10, compressions: 0 });
  });

  test("over the limit, everything but the last 20 becomes one summary; the 20 stay verbatim", async () => {
    const fake = fakeSummariser();
    const memory = new ShortTermMemory({ summarise: fake.summarise });
    const sent = Array.from({ length: 51 }, (_, k) => msg(k + 1));
    for (const m of sent) memory.add("c", m);
    expect(fake.calls).toHaveLength(1);
    expect(contents(fake.calls[0]!.messages)).toEqual(range(1, 31));
    expect(memory.stats().compressing).toBe(1);

    fake.calls[0]!.resolve("the user greeted; 31 turns of small talk");
    await memory.settled("c");
    const window = memory.messages("c");
    expect(window).toHaveLength(21);
    expect(isSummary(window[0]!)).toBe(true);
    expect(window[0]).toEqual({ role: "system", content: `${SUMMARY_MARKER}\nthe user greeted; 31 turns of small talk` });
    // The very same message objects, in order: verbatim.
    window.slice(1).forEach((m, k) => expect(m).toBe(sent[31 + k]!));
    expect(memory.stats()).toMatchObject({ messages: 21, compressions: 1, compressionFailures: 0, dropped: 0, compressing: 0 });
  });

  test("adds during a compression are neither lost nor duplicated", async () => {
    const fake = fakeSummariser();
    const memory = new ShortTermMemory({ summarise: fake.summarise });
    fill(memory, "c", 1, 51);
    fill(memory, "c", 52, 70); // while the summariser is busy
    expect(fake.calls).toHaveLength(1); // one compression at a time
    fake.calls[0]!.resolve("S1");
    await memory.settled("c");
    expect(contents(memory.messages("c"))).toEqual([`${SUMMARY_MARKER}\nS1`, ...range(32, 70)]);

    // The next compression rolls the previous summary forward.
    fill(memory, "c", 71, 81);
    expect(fake.calls).toHaveLength(2);
    expect(contents(fake.calls[1]!.messages)).toEqual([`${SUMMARY_MARKER}\nS1`, ...range(32, 61)]);
    fill(memory, "c", 82, 85);
    fake.calls[1]!.resolve("S2");
    await memory.settled("c");
    expect(contents(memory.messages("c"))).toEqual([`${SUMMARY_MARKER}\nS2`, ...range(62, 85)]);
  });

  test("a failing summariser costs the older messages, never the newest 20, and is recorded", async () => {
    const fake = fakeSummariser();
    const memory = new ShortTermMemory({ summarise: fake.summarise });
    fill(memory, "c", 1, 51);
    fill(memory, "c", 52, 55);
    fake.calls[0]!.reject(new Error("summariser actor unavailable"));
    await memory.settled("c");
    expect(contents(memory.messages("c"))).toEqual(range(32, 55));
    const stats = memory.stats();
    expect(stats).toMatchObject({ compressions: 0, compressionFailures: 1, dropped: 31, compressing: 0 });
    expect(stats.lastFailure).toMatchObject({ contextId: "c", error: "summariser actor unavailable" });

    // Adds keep working and the next compression is attempted again.
    fill(memory, "c", 56, 82);
    expect(fake.calls).toHaveLength(2);
    fake.calls[1]!.resolve("S");
    await memory.settled("c");
    expect(contents(memory.messages("c"))).toEqual([`${SUMMARY_MARKER}\nS`, ...range(63, 82)]);
  });

  test("a summariser that throws synchronously or returns a non-string counts as a failure", async () => {
    const memory = new ShortTermMemory({ limit: 5, keep: 2, summarise: (() => { throw new Error("boom"); }) as Summariser });
    fill(memory, "c", 1, 6);
    await memory.settled();
    expect(contents(memory.messages("c"))).toEqual(range(5, 6));
    const odd = new ShortTermMemory({ limit: 5, keep: 2, summarise: (async () => 42) as unknown as Summariser });
    fill(odd, "c", 1, 6);
    await odd.settled();
    expect(odd.stats().lastFailure?.error).toBe("summariser did not return a string");
  });

  test("a hung summariser never blocks adds: the hard limit bounds the window and the timeout fails it", async () => {
    const fake = fakeSummariser();
    const memory = new ShortTermMemory({ limit: 10, keep: 4, hardLimit: 15, summarise: fake.summarise, summariseTimeoutMs: 50 });
    fill(memory, "c", 1, 40); // compression of m1..m7 starts at m11, then hangs
    expect(contents(memory.messages("c"))).toEqual(range(26, 40));
    expect(fake.calls[0]!.messages.map((m) => m.content)).toEqual(range(1, 7));
    await waitFor(() => memory.stats().compressionFailures === 1, "the summariser timeout");
    const stats = memory.stats();
    expect(stats.lastFailure?.error).toContain("timed out");
    // m8..m25 were dropped by the hard limit, m1..m7 by the failed compression; the newest stay.
    expect(stats.dropped).toBe(25);
    // The window was m26..m40 when the failure landed, so the retry summarises m26..m36.
    expect(fake.calls).toHaveLength(2);
    expect(contents(fake.calls[1]!.messages)).toEqual(range(26, 36));
    await memory.settled("c"); // the retry hangs too and times out
    expect(memory.stats().compressionFailures).toBe(2);
    expect(contents(memory.messages("c"))).toEqual(range(37, 40));
  });

  test("the least recently used context is evicted past maxContexts", () => {
    const memory = new ShortTermMemory({ maxContexts: 3 });
    for (const c of ["a", "b", "c"]) memory.add(c, msg(1));
    memory.messages("a"); // reading counts as use
    memory.add("d", msg(1));
    expect(memory.messages("b")).toEqual([]);
    expect(memory.stats()).toMatchObject({ contexts: 3, evictions: 1 });
    memory.add("c", msg(2));
    memory.add("e", msg(1));
    expect(memory.messages("a")).toEqual([]);
    expect(contents(memory.messages("c"))).toEqual(["m1", "m2"]);
  });

  test("a compression that ends after clear() or eviction does not bring the context back", async () => {
    const fake = fakeSummariser();
    const memory = new ShortTermMemory({ limit: 5, keep: 2, maxContexts: 2, summarise: fake.summarise });
    fill(memory, "x", 1, 6);
    memory.clear("x");
    memory.add("x", msg(100));
    fill(memory, "y", 1, 6);
    memory.add("z", msg(1)); // evicts x (least recently used)
    fake.calls[0]!.resolve("late");
    fake.calls[1]!.resolve("kept");
    await memory.settled();
    expect(memory.messages("x")).toEqual([]);
    expect(contents(memory.messages("y"))).toEqual([`${SUMMARY_MARKER}\nkept`, "m5", "m6"]);
    expect(memory.stats().compressions).toBe(1);
  });

  test("bad bounds and context ids are code 2", () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        return error instanceof HermesError ? error.code : -1;
      }
      return 0;
    };
    expect(code(() => new ShortTermMemory({ limit: 20, keep: 20 }))).toBe(2);
    expect(code(() => new ShortTermMemory({ limit: 50, hardLimit: 40 }))).toBe(2);
    expect(code(() => new ShortTermMemory({ maxContexts: 0 }))).toBe(2);
    expect(code(() => new ShortTermMemory().add("", msg(1)))).toBe(2);
  });
});
