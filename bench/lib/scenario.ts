/** What every scenario file exports, and the helpers they share. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onExit } from "./cleanup.ts";
import type { Chart } from "./chart-data.ts";
import type { Figure } from "./report.ts";

/** How long and how often a scenario measures. */
export interface ScenarioOptions {
  /** Measured time for the whole scenario, in ms, split across rounds and contenders. */
  durationMs: number;
  /** Rounds: every contender runs once per round, in a rotating order (interleaved). */
  rounds: number;
  /** Smaller warm-ups and bursts. */
  quick: boolean;
}

/**
 * Measured seconds and rounds per scenario, [full, quick]: what `hermes-mesh bench` and a
 * scenario file run alone (`bun bench/hop.bench.ts [--quick]`) both use.
 */
export const SCENARIO_SIZES: Record<string, { seconds: [number, number]; rounds: [number, number] }> = {
  codec: { seconds: [6, 1], rounds: [5, 3] },
  pingpong: { seconds: [12, 2], rounds: [10, 2] },
  stream: { seconds: [12, 2], rounds: [5, 2] },
  hop: { seconds: [12, 1.5], rounds: [10, 2] },
  fanin: { seconds: [12, 1.5], rounds: [4, 2] },
  chain: { seconds: [12, 1.5], rounds: [5, 2] },
  fanout: { seconds: [12, 1.5], rounds: [5, 1] },
  // openloop: split over its offered rates and contenders (quick: cross core only)
  openloop: { seconds: [30, 1.5], rounds: [3, 1] },
  // restart: the time of the kills and the steady traffic between them (sets their spacing)
  restart: { seconds: [30, 4], rounds: [4, 2] },
  // footprint: the actors' idle time before their memory is read (start-ups take what they take)
  footprint: { seconds: [1, 0.3], rounds: [3, 1] },
  // gateway: one sustained load (after a warm-up of 3 s, quick 1 s); the baseline gets at most 10 s
  gateway: { seconds: [30, 1], rounds: [1, 1] },
  // deno: split over the hop rounds (a quarter), the stream bursts and the idle wait
  deno: { seconds: [8, 1], rounds: [4, 2] },
  // nats: rounds of round-trip batches and event bursts (their sizes are fixed; seconds unused)
  nats: { seconds: [8, 2], rounds: [4, 1] },
};

export interface ScenarioResult {
  figures: Figure[];
  /** Remarks printed under the table (placement fallbacks, verification). */
  notes: string[];
  /** Contenders left out, each with why and how to install what it needs (printed after the notes). */
  skipped?: string[];
  /** Per-round measurements, kept in the JSON output. */
  rounds?: unknown;
  /** Charts the scenario describes itself (full latency curves, growth); others are derived from the figures. */
  charts?: Chart[];
}

export interface Scenario {
  readonly name: string;
  readonly description: string;
  run(options: ScenarioOptions): Promise<ScenarioResult>;
}

/**
 * `items` in round `round`'s order: rotated by one each round, so no contender always runs
 * first (or always right after the same one).
 */
export function rotated<T>(items: readonly T[], round: number): T[] {
  const k = round % Math.max(1, items.length);
  return [...items.slice(k), ...items.slice(0, k)];
}

/** A private temporary directory for socket files, removed on dispose (or at exit at the latest). */
export function tempDir(): { path: string } & Disposable {
  const path = mkdtempSync(join(tmpdir(), "hm-bench-"));
  const remove = () => rmSync(path, { recursive: true, force: true });
  const forget = onExit(remove);
  return {
    path,
    [Symbol.dispose]: () => {
      forget();
      remove();
    },
  };
}

/** Disposes a session, reporting (not throwing) a failure, so every other one is still disposed. */
export async function disposeQuietly(resource: AsyncDisposable): Promise<void> {
  try {
    await resource[Symbol.asyncDispose]();
  } catch (error) {
    console.error(`cleanup failed: ${(error as Error).message}`);
  }
}
