import { pinSelf } from "./placement.ts";
import { formatTable } from "./report.ts";
import type { ScenarioOptions, ScenarioResult } from "./scenario.ts";

/**
 * Runs one scenario on its own (`bun bench/<name>.bench.ts [--quick]`): sizes for full and
 * quick runs as [measured ms, rounds], this process pinned to cpu 0 like under the bench
 * command (unless `pin` is false), and the table and notes printed.
 *
 * @example
 * if (import.meta.main) await runStandalone(runChain, { full: [12_000, 5], quick: [2000, 2] });
 */
export async function runStandalone(
  run: (options: ScenarioOptions) => Promise<ScenarioResult>,
  sizes: { full: [number, number]; quick: [number, number] },
  pin = true,
): Promise<void> {
  const quick = process.argv.includes("--quick");
  const [durationMs, rounds] = quick ? sizes.quick : sizes.full;
  const restore = pin ? pinSelf(0) : () => {};
  try {
    const result = await run({ durationMs, rounds, quick });
    console.log(formatTable(result.figures));
    for (const note of result.notes) console.log(note);
    for (const line of result.skipped ?? []) console.log(line);
  } finally {
    restore();
  }
}
