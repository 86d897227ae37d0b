/**
 * Latency histograms: values are recorded in nanoseconds into an HdrHistogram (3 significant
 * digits, so every percentile is within 0.1% of the true sample) and reported in microseconds.
 */
import * as hdr from "hdr-histogram-js";

/** Percentiles of a latency distribution, in microseconds. */
export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

/** The percentiles the harness reports, as [summary key, percentile]. */
export const PERCENTILES = [["p50", 50], ["p90", 90], ["p99", 99], ["p999", 99.9]] as const;

/** The percentiles of a latency curve (chart): dense in the tail, where the distributions differ. */
export const CURVE_PERCENTILES = [0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100] as const;

/** Slowest value tracked: one minute, in ns. Larger samples are clamped and still counted. */
const HIGHEST_NS = 60_000_000_000;

/**
 * A latency recorder.
 *
 * @example
 * const h = new LatencyHistogram();
 * const t = Bun.nanoseconds(); await roundTrip(); h.record(Bun.nanoseconds() - t);
 * h.summary().p99; // microseconds
 */
export class LatencyHistogram {
  #h: hdr.Histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_NS, numberOfSignificantValueDigits: 3 });

  /** A histogram from `encode()`'s text (one recorded in another process). */
  static decode(text: string): LatencyHistogram {
    const h = new LatencyHistogram();
    h.#h = hdr.decodeFromCompressedBase64(text);
    return h;
  }

  /** The histogram as compressed base64 text (HdrHistogram's own encoding), to send to another process. */
  encode(): string {
    return hdr.encodeIntoCompressedBase64(this.#h);
  }

  /** Adds every sample of `other` (rounds of the same measurement). */
  add(other: LatencyHistogram): void {
    this.#h.add(other.#h);
  }

  /** Records one sample in nanoseconds. */
  record(ns: number): void {
    this.#h.recordValue(Math.min(Math.max(1, Math.round(ns)), HIGHEST_NS));
  }

  get count(): number {
    return this.#h.totalCount;
  }

  /**
   * The latency curve: [percentile, microseconds] at CURVE_PERCENTILES (100 is the max),
   * only as far into the tail as the samples reach (p99.99 needs 10,000 of them). Empty when empty.
   */
  curve(): Array<[number, number]> {
    const h = this.#h;
    if (h.totalCount === 0) return [];
    const points: Array<[number, number]> = [];
    for (const p of CURVE_PERCENTILES) {
      if (p > 0 && p < 100 && h.totalCount * (1 - p / 100) < 1) continue;
      points.push([p, (p === 100 ? h.maxValue : p === 0 ? h.minNonZeroValue : h.getValueAtPercentile(p)) / 1000]);
    }
    return points;
  }

  /** Percentiles in microseconds (all 0 when empty). */
  summary(): LatencySummary {
    const us = (ns: number) => ns / 1000;
    const h = this.#h;
    const summary: LatencySummary = { count: h.totalCount, p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0 };
    if (h.totalCount === 0) return summary;
    for (const [key, percentile] of PERCENTILES) summary[key] = us(h.getValueAtPercentile(percentile));
    summary.max = us(h.maxValue);
    summary.mean = us(h.mean);
    return summary;
  }
}

/** Median of a list of numbers (0 for an empty list). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
