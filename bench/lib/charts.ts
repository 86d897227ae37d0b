/**
 * Writes a run's charts: one SVG page per scenario (bench/lib/svg-chart.ts) and, when
 * `@resvg/resvg-js` (an optional dependency) loads, a PNG of each. Charts come from the
 * scenario (its `charts`) or are derived from its figures.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { chartsFromFigures, type Chart } from "./chart-data.ts";
import { missingPackage } from "./optional-package.ts";
import type { Figure } from "./report.ts";
import { svgPage } from "./svg-chart.ts";

/** What the charts need of a run (the --json report has it). */
export interface ChartSource {
  figures: readonly Figure[];
  scenarios: Record<string, { charts?: Chart[] }>;
}

/** Every scenario's charts: its own, else derived from its figures. */
export function scenarioCharts(source: ChartSource): Array<[string, Chart[]]> {
  return Object.entries(source.scenarios)
    .map(([name, s]): [string, Chart[]] => [name, s.charts && s.charts.length > 0 ? s.charts : chartsFromFigures(name, source.figures)])
    .filter(([, charts]) => charts.length > 0);
}

/**
 * Where charts go without --charts: bench/results in a clone of the repository (git-ignored),
 * else ./hermes-mesh-bench in the current directory, since an installed package may be
 * read-only and a run's output is the user's, not the package's.
 *
 * @example
 * await writeCharts(report, defaultChartDir());
 */
export function defaultChartDir(): string {
  const root = join(import.meta.dir, "../..");
  return existsSync(join(root, ".git")) ? join(root, "bench", "results") : resolve("hermes-mesh-bench");
}

type Renderer = (svg: string) => Uint8Array;

/** resvg (an optional dependency), if it is installed and loads here; otherwise why not, and how to install it. */
async function pngRenderer(): Promise<Renderer | string> {
  const missing = missingPackage("@resvg/resvg-js");
  if (missing) return `PNG skipped: ${missing}`;
  try {
    const { Resvg } = await import("@resvg/resvg-js");
    return (svg) => new Resvg(svg, { font: { loadSystemFonts: true, defaultFontFamily: "DejaVu Sans" }, background: "#ffffff" }).render().asPng();
  } catch (error) {
    return `PNG skipped: @resvg/resvg-js did not load (${(error as Error).message.split("\n")[0]})`;
  }
}

/**
 * Writes `<dir>/<scenario>.svg` (and `.png`) for every scenario with charts; returns the files and a note when PNGs were skipped.
 *
 * @example
 * const { files } = await writeCharts(report, "bench/results");
 */
export async function writeCharts(source: ChartSource, dir: string, options: { png?: boolean } = {}): Promise<{ files: string[]; note?: string }> {
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  const render = options.png === false ? "PNG not asked for" : await pngRenderer();
  for (const [name, charts] of scenarioCharts(source)) {
    const svg = svgPage(`hermes-mesh bench: ${name}`, charts);
    const path = join(dir, `${name}.svg`);
    writeFileSync(path, svg);
    files.push(path);
    if (typeof render === "function") {
      const png = join(dir, `${name}.png`);
      writeFileSync(png, render(svg));
      files.push(png);
    }
  }
  return { files, ...(typeof render === "string" && { note: render }) };
}
