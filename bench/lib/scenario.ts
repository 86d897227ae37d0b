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
