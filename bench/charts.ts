/**
 * Draws the charts of a saved run again: `bun bench/charts.ts <run.json> [out dir] [--no-png]`
 * (the JSON of `hermes-mesh bench --json`; out dir default: as the bench command's, bench/results
 * in a clone, ./hermes-mesh-bench otherwise).
 */
import { readFileSync } from "node:fs";
import { defaultChartDir, writeCharts, type ChartSource } from "./lib/charts.ts";

if (import.meta.main) {
  const args = process.argv.slice(2).filter((a) => a !== "--no-png");
  const [input, out = defaultChartDir()] = args;
  if (!input) {
    console.error("usage: bun bench/charts.ts <run.json> [out dir] [--no-png]");
    process.exit(2);
  }
  const source = JSON.parse(readFileSync(input, "utf8")) as ChartSource;
  const { files, note } = await writeCharts(source, out, { png: !process.argv.includes("--no-png") });
  for (const file of files) console.log(`wrote ${file}`);
  if (note) console.log(note);
}
