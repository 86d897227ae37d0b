/**
 * Charts as hand-written SVG (no dependencies): latency percentile curves, lines over hops or
 * offered rate, and throughput bars, each a 760-wide panel (380 high, bars as high as they
 * need); a page stacks a scenario's panels.
 * Latency and throughput span decades between hermes and the raw socket, so value axes are
 * logarithmic (every bar and point also carries its number).
 */
import type { Chart, Series } from "./chart-data.ts";

export const WIDTH = 760;
export const HEIGHT = 380;
const M = { left: 72, right: 220, top: 34, bottom: 48 };
const PLOT_W = WIDTH - M.left - M.right;
const PLOT_H = HEIGHT - M.top - M.bottom;
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f"];
const BASELINE_COLOR = "#555";
const FONT = `font-family="DejaVu Sans, Arial, sans-serif"`;

/** Text safe inside SVG. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

const fmt = (v: number) => (v >= 1e6 ? `${+(v / 1e6).toPrecision(3)}M` : v >= 1e3 ? `${+(v / 1e3).toPrecision(3)}k` : `${+v.toPrecision(3)}`);

/** A linear or log axis mapping values to pixels. */
interface Axis {
  map(v: number): number;
  ticks: Array<{ value: number; label: string }>;
}

function logAxis(min: number, max: number, from: number, to: number): Axis {
  const lo = Math.floor(Math.log10(Math.max(min, 1e-9)));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(max, min * 1.0001, 1e-9))));
  const ticks = [];
  for (let e = lo; e <= hi; e++) ticks.push({ value: 10 ** e, label: fmt(10 ** e) });
  return { map: (v) => from + ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo)) * (to - from), ticks };
}

/** A log axis from exactly `min` to `max` (the measured x values are its ticks). */
function exactLogAxis(min: number, max: number, from: number, to: number): Axis {
  const lo = Math.log10(min);
  const span = Math.log10(max) - lo || 1;
  return { map: (v) => from + ((Math.log10(v) - lo) / span) * (to - from), ticks: [] };
}

function linearAxis(min: number, max: number, from: number, to: number): Axis {
  const span = max - min || 1;
  const step = 10 ** Math.floor(Math.log10(span / 5));
  const nice = [1, 2, 5, 10].map((k) => k * step).find((s) => span / s <= 6) ?? step * 10;
  const lo = Math.floor(min / nice) * nice;
  const hi = Math.ceil(max / nice) * nice || nice;
  const ticks = [];
  for (let v = lo; v <= hi + nice / 2; v += nice) ticks.push({ value: v, label: fmt(v) });
  return { map: (v) => from + ((v - lo) / (hi - lo || 1)) * (to - from), ticks };
}

/** The HdrHistogram percentile axis: x = log10(1 / (1 - p)), so 90, 99, 99.9 ... are evenly spaced; 100 (max) half a step past the last. */
const PERCENTILE_TICKS = [0, 90, 99, 99.9, 99.99];
function percentileX(p: number, last: number): number {
  if (p >= 100) return last + 0.5;
  return Math.log10(1 / (1 - p / 100));
}

function frame(title: string, x: Axis, y: Axis, xLabel: string, yLabel: string, vertical = true): string {
  const parts: string[] = [];
  parts.push(`<rect x="0" y="0" width="${WIDTH}" height="${HEIGHT}" fill="#fff"/>`);
  parts.push(`<text x="${M.left}" y="20" ${FONT} font-size="14" font-weight="bold">${escapeXml(title)}</text>`);
  for (const t of y.ticks) {
    const py = y.map(t.value);
    parts.push(`<line x1="${M.left}" y1="${py.toFixed(1)}" x2="${M.left + PLOT_W}" y2="${py.toFixed(1)}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${M.left - 6}" y="${(py + 4).toFixed(1)}" ${FONT} font-size="11" text-anchor="end">${escapeXml(t.label)}</text>`);
  }
  for (const t of x.ticks) {
    const px = x.map(t.value);
    if (vertical) parts.push(`<line x1="${px.toFixed(1)}" y1="${M.top}" x2="${px.toFixed(1)}" y2="${M.top + PLOT_H}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${px.toFixed(1)}" y="${M.top + PLOT_H + 16}" ${FONT} font-size="11" text-anchor="middle">${escapeXml(t.label)}</text>`);
  }
  parts.push(`<rect x="${M.left}" y="${M.top}" width="${PLOT_W}" height="${PLOT_H}" fill="none" stroke="#999"/>`);
  parts.push(`<text x="${M.left + PLOT_W / 2}" y="${HEIGHT - 8}" ${FONT} font-size="12" text-anchor="middle">${escapeXml(xLabel)}</text>`);
  parts.push(`<text x="16" y="${M.top + PLOT_H / 2}" ${FONT} font-size="12" text-anchor="middle" transform="rotate(-90 16 ${M.top + PLOT_H / 2})">${escapeXml(yLabel)}</text>`);
  return parts.join("\n");
}

function legend(labels: ReadonlyArray<{ label: string; color: string; dashed?: string }>): string {
  return labels.map((l, i) => {
    const y = M.top + 8 + i * 18;
    const x = M.left + PLOT_W + 14;
    return `<line x1="${x}" y1="${y}" x2="${x + 22}" y2="${y}" stroke="${l.color}" stroke-width="2.5"${l.dashed ? ` stroke-dasharray="${l.dashed}"` : ""}/>` +
      `<text x="${x + 28}" y="${y + 4}" ${FONT} font-size="11">${escapeXml(l.label)}</text>`;
  }).join("\n");
}

/** The baseline of a chart is the last series (scenarios list it last), or a series named like one. */
function isBaseline(label: string, index: number, count: number): boolean {
  return /raw/i.test(label) || (index === count - 1 && count > 1 && !/hermes|actor/i.test(label));
}

function polyline(series: Series, x: (v: number) => number, y: (v: number) => number, color: string, dashed?: string): string {
  const pts = series.points.filter(([, v]) => v > 0).map(([a, b]) => `${x(a).toFixed(1)},${y(b).toFixed(1)}`);
  if (pts.length === 0) return "";
  const dots = pts.map((p) => `<circle cx="${p.split(",")[0]}" cy="${p.split(",")[1]}" r="2.5" fill="${color}"/>`).join("");
  return `<polyline points="${pts.join(" ")}" fill="none" stroke="${color}" stroke-width="2"${dashed ? ` stroke-dasharray="${dashed}"` : ""}/>${dots}`;
}

/** Baselines in greys, each with its own dash pattern; the others in colours. */
const BASELINE_STYLES = [{ color: BASELINE_COLOR, dash: "6 3" }, { color: "#999", dash: "2 3" }, { color: "#222", dash: "10 4" }];

function lineColors(series: readonly Series[]): Array<{ label: string; color: string; dashed?: string }> {
  let c = 0;
  let b = 0;
  return series.map((s, i) => {
    if (!isBaseline(s.label, i, series.length)) return { label: s.label, color: COLORS[c++ % COLORS.length]! };
    const style = BASELINE_STYLES[b++ % BASELINE_STYLES.length]!;
    return { label: s.label, color: style.color, dashed: style.dash };
  });
}

function percentilePanel(chart: Extract<Chart, { kind: "percentiles" }>): string {
  const values = chart.series.flatMap((s) => s.points.map(([, v]) => v)).filter((v) => v > 0);
  const lastTick = percentileX(PERCENTILE_TICKS.at(-1)!, 0);
  const xr = percentileX(100, lastTick);
  const x: Axis = {
    map: (v) => M.left + (v / xr) * PLOT_W,
    ticks: [...PERCENTILE_TICKS.map((p) => ({ value: percentileX(p, lastTick), label: p === 0 ? "0%" : `${p}%` })), { value: xr, label: "max" }],
  };
  const y = logAxis(Math.min(...values), Math.max(...values), M.top + PLOT_H, M.top);
  const colors = lineColors(chart.series);
  const lines = chart.series.map((s, i) => polyline(s, (p) => x.map(percentileX(p, lastTick)), y.map, colors[i]!.color, colors[i]!.dashed));
  return [frame(chart.title, x, y, "percentile", "latency, us (log)"), ...lines, legend(colors)].join("\n");
}

function linePanel(chart: Extract<Chart, { kind: "lines" }>): string {
  const xs = chart.series.flatMap((s) => s.points.map(([v]) => v));
  const ys = chart.series.flatMap((s) => s.points.map(([, v]) => v)).filter((v) => v > 0);
  const x = chart.logX ? exactLogAxis(Math.min(...xs), Math.max(...xs), M.left, M.left + PLOT_W) : linearAxis(Math.min(...xs), Math.max(...xs), M.left, M.left + PLOT_W);
  if (chart.logX) {
    // A tick at every measured x, the label dropped where it would touch the previous one.
    let lastPx = -Infinity;
    x.ticks = [...new Set(xs)].sort((a, b) => a - b).map((v) => {
      const px = x.map(v);
      const label = px - lastPx >= 34 ? fmt(v) : "";
      if (label) lastPx = px;
      return { value: v, label };
    });
  }
  const y = chart.logY !== false ? logAxis(Math.min(...ys), Math.max(...ys), M.top + PLOT_H, M.top) : linearAxis(0, Math.max(...ys), M.top + PLOT_H, M.top);
  const colors = lineColors(chart.series);
  const lines = chart.series.map((s, i) => polyline(s, x.map, y.map, colors[i]!.color, colors[i]!.dashed));
  return [frame(chart.title, x, y, chart.xLabel, `${chart.yLabel}${chart.logY !== false ? " (log)" : ""}`), ...lines, legend(colors)].join("\n");
}

/** Height of a chart's panel: bar charts take what their bars need. */
export function panelHeight(chart: Chart): number {
  return chart.kind === "bars" ? Math.min(HEIGHT, M.top + 26 * Math.max(1, chart.bars.filter((b) => b.value > 0).length) + 48) : HEIGHT;
}

function barPanel(chart: Extract<Chart, { kind: "bars" }>): string {
  const bars = chart.bars.filter((b) => b.value > 0);
  // As wide as the longest label needs (about 6.2 px a character at 11 px), within bounds.
  const labelW = Math.round(Math.min(360, Math.max(140, 16 + 6.2 * Math.max(0, ...bars.map((b) => b.label.length)))));
  const left = labelW;
  const right = WIDTH - 80;
  const values = bars.map((b) => b.value);
  const axis = logAxis(Math.max(1, Math.min(...values) / 2), Math.max(...values, 10), left, right);
  const rowH = Math.min(26, (HEIGHT - M.top - M.bottom) / Math.max(1, bars.length));
  const parts = [`<rect x="0" y="0" width="${WIDTH}" height="${panelHeight(chart)}" fill="#fff"/>`, `<text x="12" y="20" ${FONT} font-size="14" font-weight="bold">${escapeXml(chart.title)}</text>`];
  for (const t of axis.ticks) {
    const px = axis.map(t.value);
    parts.push(`<line x1="${px.toFixed(1)}" y1="${M.top}" x2="${px.toFixed(1)}" y2="${M.top + bars.length * rowH}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${px.toFixed(1)}" y="${M.top + bars.length * rowH + 16}" ${FONT} font-size="11" text-anchor="middle">${escapeXml(t.label)}</text>`);
  }
  // One colour per contender: the label up to its first ",", " to " or " at " names it.
  const colorOf = new Map<string, string>();
  bars.forEach((b, i) => {
    const y = M.top + i * rowH;
    const key = b.label.split(/,| to | at /)[0]!;
    if (!colorOf.has(key)) colorOf.set(key, COLORS[colorOf.size % COLORS.length]!);
    const color = b.baseline ? BASELINE_COLOR : colorOf.get(key)!;
    const w = Math.max(1, axis.map(b.value) - left);
    parts.push(`<text x="${left - 6}" y="${(y + rowH * 0.65).toFixed(1)}" ${FONT} font-size="11" text-anchor="end">${escapeXml(b.label)}</text>`);
    parts.push(`<rect x="${left}" y="${(y + rowH * 0.15).toFixed(1)}" width="${w.toFixed(1)}" height="${(rowH * 0.7).toFixed(1)}" fill="${color}"${b.baseline ? ` fill-opacity="0.6"` : ""}/>`);
    parts.push(`<text x="${(left + w + 4).toFixed(1)}" y="${(y + rowH * 0.65).toFixed(1)}" ${FONT} font-size="11">${escapeXml(fmt(b.value))}</text>`);
  });
  parts.push(`<text x="${(left + right) / 2}" y="${M.top + bars.length * rowH + 34}" ${FONT} font-size="12" text-anchor="middle">${escapeXml(`${chart.unit} (log scale; grey: baseline)`)}</text>`);
  return parts.join("\n");
}

/** One chart's panel (SVG elements, origin at 0,0, WIDTH x HEIGHT). */
export function panel(chart: Chart): string {
  if (chart.kind === "percentiles") return percentilePanel(chart);
  if (chart.kind === "lines") return linePanel(chart);
  return barPanel(chart);
}

/**
 * A standalone SVG document with the charts stacked top to bottom.
 *
 * @example
 * writeFileSync("hop.svg", svgPage("hop", charts));
 */
export function svgPage(title: string, charts: readonly Chart[]): string {
  let height = 0;
  const body = charts.map((chart) => {
    const g = `<g transform="translate(0 ${height})">\n${panel(chart)}\n</g>`;
    height += panelHeight(chart);
    return g;
  }).join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}">
<title>${escapeXml(title)}</title>
${body}
</svg>
`;
}
