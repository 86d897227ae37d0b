/**
 * `hermes-mesh bench [scenario...] [--quick] [--json out.json] [--duration s]`: runs the
 * transport benchmarks and prints every figure next to the baseline measured in the same run.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { codecScenario } from "./codec.bench.ts";
import { denoScenario } from "./deno.bench.ts";
import { natsScenario } from "./nats.bench.ts";
import { footprintScenario } from "./footprint.bench.ts";
import { gatewayScenario } from "./gateway-load.ts";
import { hopScenario } from "./hop.bench.ts";
import { chainScenario } from "./chain.bench.ts";
import { faninScenario } from "./fanin.bench.ts";
import { fanoutScenario } from "./fanout.bench.ts";
import { openloopScenario } from "./openloop.bench.ts";
import { defaultChartDir, scenarioCharts, writeCharts } from "./lib/charts.ts";
import { watchInterference, type Interference } from "./lib/interference.ts";
import { availablePlacements, pinSelf } from "./lib/placement.ts";
import { formatMachine, formatTable, machineInfo, ratio, targetStatus, type Figure } from "./lib/report.ts";
import { SCENARIO_SIZES, type Scenario, type ScenarioResult } from "./lib/scenario.ts";
import { pingpongScenario } from "./pingpong.bench.ts";
import { restartScenario } from "./restart.bench.ts";
import { streamScenario } from "./stream.bench.ts";

const SCENARIOS: readonly Scenario[] = [codecScenario, pingpongScenario, streamScenario, faninScenario, hopScenario, chainScenario, fanoutScenario, openloopScenario, restartScenario, footprintScenario, gatewayScenario, denoScenario, natsScenario];


/** "default: codec 6, pingpong 12, ..." for one column of SCENARIO_SIZES, wrapped and indented under --duration. */
function secondsList(column: 0 | 1, label: string): string {
  const lines = [label];
  for (const [name, d] of Object.entries(SCENARIO_SIZES)) {
    const item = `${name} ${d.seconds[column]}`;
    if (lines.at(-1)!.length + item.length > 80) {
      lines[lines.length - 1] += ",";
      lines.push(item);
    } else lines[lines.length - 1] += (lines.at(-1) === label ? " " : ", ") + item;
  }
  return lines.map((line) => " ".repeat(19) + line).join("\n");
}

const USAGE = `Usage: hermes-mesh bench [scenario...] [--quick] [--json out.json] [--duration s]

Scenarios (default: all):
${SCENARIOS.map((s) => `  ${s.name.padEnd(10)} ${s.description}`).join("\n")}

Options:
  --quick          short warm-ups and runs, peers Bun IPC and NATS only (the whole run in under
                   60 s on 2 cores)
  --json <file>    also write every figure, per-round data, charts and the machine details as JSON
  --charts <dir>   where the SVG (and PNG) charts go (default: bench/results in a clone of the
                   repository, ./hermes-mesh-bench from an installed package)
  --duration <s>   measured seconds per scenario (footprint: idle time before memory is read)
${secondsList(0, "default:")}
${secondsList(1, "quick:")}
  -h, --help       show this help

Processes are pinned with taskset: "same core" = both on cpu 0, "cross core" = cpu 0 and cpu 1;
"unpinned, both cores" = nothing pinned (restart, footprint, gateway: actors inherit the harness's cpus).
pingpong and stream also measure the peers: Bun IPC, Node IPC (needs node), NATS (needs the
nats package, an optional dependency, and nats-server or $HERMES_NATS_SERVER) and Redis Streams
(needs redis-server or $HERMES_REDIS_SERVER); one whose package or program is missing is skipped
with a line saying how to install it. PNG charts need the optional @resvg/resvg-js.`;

/**
 * Runs the bench command and returns the exit code: 0 when every scenario ran, 1 when one
 * failed, 2 for a usage error.
 *
 * @example
 * process.exit(await runBenchCommand(["pingpong", "--quick"]));
 */
export async function runBenchCommand(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { quick: { type: "boolean" }, json: { type: "string" }, charts: { type: "string" }, duration: { type: "string" }, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    console.error(`hermes-mesh bench: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  // `hermes-mesh bench --help` is answered by main's own --help; `bench help` reaches this one.
  if (values.help || positionals[0] === "help") {
    console.log(USAGE);
    return 0;
  }
  const unknown = positionals.filter((name) => !SCENARIOS.some((s) => s.name === name));
  const duration = values.duration === undefined ? undefined : Number(values.duration);
  if (unknown.length > 0 || (duration !== undefined && !(duration > 0))) {
    const problem = unknown.length > 0 ? `unknown scenario '${unknown.join("', '")}'` : `--duration must be a positive number of seconds`;
    console.error(`hermes-mesh bench: ${problem}\n\n${USAGE}`);
    return 2;
  }
  const chosen = positionals.length > 0 ? SCENARIOS.filter((s) => positionals.includes(s.name)) : SCENARIOS;
  const quick = values.quick === true;
  const startedAt = performance.now();
  const machine = machineInfo();
  console.log(formatMachine(machine));
  const placementNote = availablePlacements().note;
  if (placementNote) console.log(`note: ${placementNote}`);

  const results: Record<string, ScenarioResult> = {};
  const interference: Record<string, Interference> = {};
  const failures: string[] = [];
  const elapsed: Record<string, number> = {};
  const restoreAffinity = pinSelf(0); // the harness side of every measurement runs on cpu 0
  try {
    for (const scenario of chosen) {
      const d = SCENARIO_SIZES[scenario.name]!;
      const seconds = duration ?? d.seconds[quick ? 1 : 0];
      const scenarioStart = performance.now();
      try {
        const watch = watchInterference();
        const result = await scenario.run({ durationMs: seconds * 1000, rounds: d.rounds[quick ? 1 : 0], quick });
        const other = watch?.();
        if (other) {
          interference[scenario.name] = other;
          const share = `${scenario.name}: other processes used ${other.otherCpuSeconds.toFixed(2)} CPU-s (${(other.otherCores * 100).toFixed(0)}% of one core) during the run`;
          result.notes.push(other.otherCores > 0.05 ? `${share}: FIGURES DISTURBED, rerun on a quiet machine` : share);
        }
        results[scenario.name] = result;
      } catch (error) {
        failures.push(`${scenario.name}: ${(error as Error).stack ?? error}`);
      }
      elapsed[scenario.name] = (performance.now() - scenarioStart) / 1000;
    }
  } finally {
    restoreAffinity();
  }

  const figures: Figure[] = Object.values(results).flatMap((r) => r.figures);
  console.log(`\nhermes-mesh bench ${argv.join(" ")}`.trimEnd());
  console.log(formatTable(figures));
  for (const note of Object.values(results).flatMap((r) => r.notes)) console.log(`note: ${note}`);
  for (const line of Object.values(results).flatMap((r) => r.skipped ?? [])) console.log(line);
  for (const failure of failures) console.error(`FAILED ${failure}`);
  console.log(formatMachine(machine));
  const chartsOf = new Map(scenarioCharts({ figures, scenarios: results }));
  const report = {
    command: ["hermes-mesh", "bench", ...argv].join(" "),
    machine,
    quick,
    seconds: (performance.now() - startedAt) / 1000,
    scenarioSeconds: elapsed,
    figures: figures.map((f) => ({ ...f, ratio: ratio(f), target: f.target && { ...f.target, status: targetStatus(f) } })),
    scenarios: Object.fromEntries(Object.entries(results).map(([name, r]) => [name, { notes: r.notes, skipped: r.skipped ?? [], interference: interference[name], rounds: r.rounds, charts: chartsOf.get(name) ?? [] }])),
    failures,
  };
  // Charts of every run (bench/results is git-ignored; docs/bench-results keeps the last full run).
  const chartDir = values.charts ?? defaultChartDir();
  try {
    const { files, note } = await writeCharts(report, chartDir);
    console.log(`charts: ${files.length} ${files.length === 1 ? "file" : "files"} in ${chartDir}${note ? ` (${note})` : ""}`);
  } catch (error) {
    console.error(`charts not written: ${(error as Error).message}`);
  }
  console.log(`bench took ${report.seconds.toFixed(1)} s (${Object.entries(elapsed).map(([name, sec]) => `${name} ${sec.toFixed(1)}`).join(", ")})`);
  if (values.json) {
    mkdirSync(dirname(values.json), { recursive: true });
    writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`wrote ${values.json}`);
  }
  return failures.length > 0 ? 1 : 0;
}
