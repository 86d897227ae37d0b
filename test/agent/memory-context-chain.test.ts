import { describe, expect, test } from "bun:test";
import { pack, unpack } from "msgpackr";
import { chainToMessages, CONTEXT_CHAIN_FIELD, DEFAULT_MAX_HOPS, extendChain, readChain, startChain, withChain, type ContextChain } from "../../src/agent/context-chain.ts";
import { HermesError } from "../../mesh/errors.ts";

const ORIGINAL = "实现一个计算两个日期之间天数的函数 (write a function that counts the days between two dates)";

function thrown(f: () => unknown): HermesError {
  try {
    f();
  } catch (error) {
    if (error instanceof HermesError) return error;
    throw error;
  }
  throw new Error("expected a HermesError");
}

describe("context chain", () => {
  test("starts with the original request and survives the wire", () => {
    const chain = startChain(ORIGINAL, "user", 1_700_000_000_000);
    expect(chain).toEqual([{ actor: "user", at: 1_700_000_000_000, summary: ORIGINAL }]);
    const payload = withChain({ step: "plan" }, chain);
    expect(payload[CONTEXT_CHAIN_FIELD]).toBe(chain);
    expect(readChain(unpack(pack(payload)))).toEqual(chain);
    expect(startChain({ request: "x", n: 1 })[0]!.summary).toBe('{"request":"x","n":1}');
    expect(readChain({ step: "plan" })).toBeUndefined();
    expect(readChain("not an object")).toBeUndefined();
  });

  test("the original request stays verbatim however many hops follow; only the latest hops are kept", () => {
    const long = `${ORIGINAL} ${"x".repeat(5000)}`;
    let chain = startChain(long);
    for (let i = 1; i <= 30; i++) chain = extendChain(chain, `actor-${i}`, `hop ${i}`);
    expect(chain).toHaveLength(1 + DEFAULT_MAX_HOPS);
    expect(chain[0]!.summary).toBe(long);
    expect(chain.slice(1).map((h) => h.actor)).toEqual(Array.from({ length: DEFAULT_MAX_HOPS }, (_, k) => `actor-${23 + k}`));

    const short = extendChain(extendChain(extendChain(startChain(ORIGINAL), "a", "1", { maxHops: 2 }), "b", "2", { maxHops: 2 }), "c", "3", { maxHops: 2 });
    expect(short.map((h) => h.summary)).toEqual([ORIGINAL, "2", "3"]);
    expect(extendChain(short, "d", "4", { maxHops: 0 })).toEqual([short[0]!]);
  });

  test("extendChain does not change its input and cuts long summaries without splitting characters", () => {
    const chain = startChain(ORIGINAL);
    const next = extendChain(chain, "planner", "步骤".repeat(3000), { maxSummary: 100 });
    expect(chain).toHaveLength(1);
    const summary = next[1]!.summary;
    expect(summary.length).toBeLessThanOrEqual(100);
    expect(summary.endsWith("…")).toBe(true);
    // An emoji is two UTF-16 units: a cut between them would leave a lone surrogate.
    const emoji = extendChain(chain, "coder", "ab😀😀😀", { maxSummary: 4 })[1]!.summary;
    expect(emoji).toBe("ab…");
    expect(emoji.isWellFormed()).toBe(true);
  });

  test("chainToMessages puts the original request first, then the steps", () => {
    let chain = startChain(ORIGINAL);
    expect(chainToMessages(chain)).toEqual([{ role: "system", content: `Original request (from user): ${ORIGINAL}` }]);
    chain = extendChain(extendChain(chain, "planner", "split into parse, count, test"), "coder", "wrote days_between()");
    const messages = chainToMessages(chain);
    expect(messages).toHaveLength(2);
    expect(messages[0]!.content).toContain(ORIGINAL);
    expect(messages[1]!.content).toMatch(/^Steps so far, oldest first:\n1\. planner \(.+\): split into parse, count, test\n2\. coder \(.+\): wrote days_between\(\)$/);
  });

  test("a malformed chain in a payload is code 2 with the reason", () => {
    const cases: Array<[unknown, RegExp]> = [
      ["a string", /context_chain: /],
      [[], /context_chain: /],
      [[{ actor: "user", at: 1 }], /context_chain\.0\.summary/],
      [[{ actor: "", at: 1, summary: "x" }], /context_chain\.0\.actor/],
      [[{ actor: "user", at: -5, summary: "x" }], /context_chain\.0\.at/],
      [[{ actor: "user", at: 1, summary: "x" }, { actor: "p", at: "yesterday", summary: "y" }], /context_chain\.1\.at/],
      [Array.from({ length: 66 }, () => ({ actor: "a", at: 1, summary: "s" })), /context_chain: /],
    ];
    for (const [value, reason] of cases) {
      const error = thrown(() => readChain({ [CONTEXT_CHAIN_FIELD]: value }));
      expect(error.code).toBe(2);
      expect(String(error.fields.reason)).toMatch(reason);
    }
    expect(thrown(() => extendChain([] as unknown as ContextChain, "a", "b")).code).toBe(2);
    expect(thrown(() => extendChain(startChain("x"), "", "b")).code).toBe(2);
    expect(thrown(() => startChain("x", "")).code).toBe(2);
    expect(thrown(() => extendChain(startChain("x"), "a", "b", { maxHops: -1 })).code).toBe(2);
  });
});
