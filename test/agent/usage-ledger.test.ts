/** The usage ledger: sums per trace, prices, unknown cost, bounded memory. */
import { expect, test } from "bun:test";
import { UsageLedger } from "../../src/agent/usage-ledger.ts";

const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });

test("sums tokens and cost per trace; models without a price cost 0 and are counted as unpriced", () => {
  const ledger = new UsageLedger({ prices: { a: { prompt_per_1k: 0.5, completion_per_1k: 1.5 } } });
  ledger.record("t1", "a", usage(2000, 1000));
  ledger.record("t1", "b", usage(10, 10));
  ledger.record("t2", "a", usage(1000, 0));
  expect(ledger.totals("t1")).toEqual({ prompt_tokens: 2010, completion_tokens: 1010, total_tokens: 3020, cost_usd: 2.5, calls: 2, unpriced_calls: 1 });
  expect(ledger.totals("t2").cost_usd).toBe(0.5);
  expect(ledger.totals("never")).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost_usd: 0, calls: 0, unpriced_calls: 0 });
});

test("totals are copies; setPrice applies to later calls; forget drops a trace", () => {
  const ledger = new UsageLedger();
  ledger.record("t", "m", usage(1000, 0));
  ledger.totals("t").calls = 99;
  expect(ledger.totals("t")).toMatchObject({ calls: 1, cost_usd: 0, unpriced_calls: 1 });
  ledger.setPrice("m", { prompt_per_1k: 2, completion_per_1k: 0 });
  ledger.record("t", "m", usage(1000, 0));
  expect(ledger.totals("t")).toMatchObject({ calls: 2, cost_usd: 2, unpriced_calls: 1 });
  ledger.forget("t");
  expect(ledger.totals("t").calls).toBe(0);
});

test("keeps at most maxTraces, forgetting the least recently recorded", () => {
  const ledger = new UsageLedger({ maxTraces: 3 });
  for (const trace of ["a", "b", "c"]) ledger.record(trace, "m", usage(1, 1));
  ledger.record("a", "m", usage(1, 1)); // a is now the most recent
  ledger.record("d", "m", usage(1, 1)); // b goes
  expect(ledger.size).toBe(3);
  expect(ledger.totals("b").calls).toBe(0);
  expect(ledger.totals("a").calls).toBe(2);
  const big = new UsageLedger();
  for (let i = 0; i < 10_050; i++) big.record(`t${i}`, "m", usage(1, 0));
  expect(big.size).toBe(10_000);
  expect(big.totals("t49").calls).toBe(0);
  expect(big.totals("t50").calls).toBe(1);
});
