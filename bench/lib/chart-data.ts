/**
 * What the charts show, as plain data kept in the run's JSON (so charts can be drawn again
 * from a saved run: `bun bench/charts.ts run.json`). A scenario may describe its own charts
 * (full latency curves, growth with hops or offered load); for the others they are derived
 * from the figures (chartsFromFigures).
 */
import type { LatencyHistogram } from "./histogram.ts";
import type { Figure } from "./report.ts";

/** One line: [x, y] points in drawing order. */
export interface Series {
  label: string;
  points: Array<[number, number]>;
}

/**
 * - `percentiles`: latency (us, log axis) against percentile on the usual HdrHistogram axis
 *   (log of 1 / (1 - p): 0, 90, 99, 99.9 ... evenly spaced); x = 100 is the max.
 * - `lines`: y against x, for growth (hops, offered rate); either axis may be logarithmic.
 * - `bars`: one bar per contender (throughput), the baseline marked.
 */
export type Chart =
  | { kind: "percentiles"; title: string; series: Series[] }
  | { kind: "lines"; title: string; xLabel: string; yLabel: string; logX?: boolean; logY?: boolean; series: Series[] }
  | { kind: "bars"; title: string; unit: string; bars: Array<{ label: string; value: number; baseline?: boolean }> };

/**
 * A percentile chart from live histograms (the series in the given order).
 *
 * @example
 * latencyChart("pingpong, same core", [{ label: "hermes", histogram: h1 }, { label: "raw socket", histogram: h2 }]);
 */
export function latencyChart(title: string, series: ReadonlyArray<{ label: string; histogram: LatencyHistogram }>): Chart {
  return { kind: "percentiles", title, series: series.map((s) => ({ label: s.label, points: s.histogram.curve() })) };
}

/** Percentile of a figure name's last word ("p50", "p99.9", "max"), or undefined. */
function percentileOf(word: string): number | undefined {
  if (word === "max") return 100;
  const m = /^p(\d+(?:\.\d+)?)$/.exec(word);
  return m ? Number(m[1]) : undefined;
}

/** "hermes request p50" -> ["hermes request", 50]; undefined when the name ends in no percentile. */
export function splitPercentile(name: string): [string, number] | undefined {
  const cut = name.lastIndexOf(" ");
  if (cut < 0) return undefined;
  const p = percentileOf(name.slice(cut + 1));
  return p === undefined ? undefined : [name.slice(0, cut), p];
}

/**
 * Charts for a scenario that describes none: per placement, a percentile chart of every
 * latency figure family ("X p50", "X p90", ... "X max", and its baseline's), and a bar chart
 * per throughput unit with each figure and its baseline once.
 */
export function chartsFromFigures(scenario: string, figures: readonly Figure[]): Chart[] {
  const charts: Chart[] = [];
  const placements = [...new Set(figures.filter((f) => f.scenario === scenario).map((f) => f.placement))];
  for (const placement of placements) {
    const mine = figures.filter((f) => f.scenario === scenario && f.placement === placement);
    const curves = new Map<string, Map<number, number>>();
    const add = (name: string, value: number) => {
      const split = splitPercentile(name);
      if (!split) return;
      let curve = curves.get(split[0]);
      if (!curve) curves.set(split[0], (curve = new Map()));
      curve.set(split[1], value);
    };
    for (const f of mine.filter((f) => f.unit === "us")) {
      add(f.name, f.value);
      if (f.baseline) add(f.baseline.name, f.baseline.value);
    }
    const series = [...curves].filter(([, c]) => c.size >= 2).map(([label, c]) => ({ label, points: [...c].sort((a, b) => a[0] - b[0]) }));
    if (series.length > 0) charts.push({ kind: "percentiles", title: `${scenario}, ${placement}`, series });
    for (const unit of new Set(mine.filter((f) => f.better === "higher").map((f) => f.unit))) {
      const bars = new Map<string, { label: string; value: number; baseline?: boolean }>();
      for (const f of mine.filter((f) => f.unit === unit && f.better === "higher")) {
        bars.set(f.name, { label: f.name, value: f.value });
        if (f.baseline && !bars.has(f.baseline.name)) bars.set(f.baseline.name, { label: f.baseline.name, value: f.baseline.value, baseline: true });
      }
      charts.push({ kind: "bars", title: `${scenario}, ${unit}, ${placement}`, unit, bars: [...bars.values()] });
    }
  }
  return charts;
}
