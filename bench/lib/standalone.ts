import { pinSelf } from "./placement.ts";
import { formatTable } from "./report.ts";
import { SCENARIO_SIZES, type ScenarioOptions, type ScenarioResult } from "./scenario.ts";

/**
 * Runs one scenario on its own (`bun bench/<name>.bench.ts [--quick]`): the sizes the bench
 * command gives it (SCENARIO_SIZES), this process pinned to cpu 0 like under the bench command
 * (unless `pin` is false), and the table and notes printed.
 *
 * @example
 * if (import.meta.main) await runStandalone(runChain, "chain");
 */
export async function runStandalone(run: (options: ScenarioOptions) => Promise<ScenarioResult>, name: string, pin = true): Promise<void> {
  const quick = process.argv.includes("--quick");
  const sizes = SCENARIO_SIZES[name];
  if (!sizes) throw new Error(`no sizes for scenario ${name} in SCENARIO_SIZES`);
  const column = quick ? 1 : 0;
  const [durationMs, rounds] = [sizes.seconds[column] * 1000, sizes.rounds[column]];
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
