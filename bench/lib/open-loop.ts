/**
 * Open-loop load: requests go out on a fixed schedule, request i at t0 + i / rate, whether or
 * not earlier ones were answered, and each latency is measured from its SCHEDULED send time.
 * A request the generator sent late (its event loop was busy, the system was slow to answer
 * earlier ones) still counts from when it should have gone, so a stall shows in every request
 * it delayed: that is the correction for coordinated omission. Because the schedule is kept
 * rather than reconstructed, the histograms record plain values: HdrHistogram's
 * `recordValueWithExpectedInterval` back-fills the samples a CLOSED loop skipped during a stall,
 * and applied here it would count those stalls twice.
 *
 * Bun's timers have a 1 ms resolution, so the generator sleeps on a timer only while the next
 * send is more than 1.5 ms away and otherwise polls the clock between I/O callbacks
 * (setImmediate): sends go out within microseconds of their schedule, at the price of one busy
 * cpu (this process's). The lag of each send behind its schedule is recorded too.
 */
import { LatencyHistogram } from "./histogram.ts";

/** One open-loop run at a fixed offered rate. */
export interface OpenLoopSpec {
  /** Offered requests per second. */
  rate: number;
  /** How long requests are sent; answers are then waited for up to `drainMs`. */
  durationMs: number;
  /** Past this many unanswered requests the run stops sending and is marked saturated. Default: 2 s of requests, at least 10,000. */
  maxOutstanding?: number;
  /** Default 5000. */
  drainMs?: number;
}

export interface OpenLoopResult {
  offered: number;
  /** Requests the schedule called for, and those sent (fewer when saturated). */
  scheduled: number;
  sent: number;
  completed: number;
  failed: number;
  /** Answers per second, from the first scheduled send to the last answer. */
  achieved: number;
  /** Stopped early: the unanswered requests passed maxOutstanding, or answers were still missing after drainMs. */
  saturated: boolean;
  /** Latency from the scheduled send time (coordinated-omission-corrected), ns. */
  fromScheduled: LatencyHistogram;
  /** Latency from the actual send time (what a closed-loop client would report), ns. */
  fromSent: LatencyHistogram;
  /** How late each send left, ns. */
  sendLag: LatencyHistogram;
}

/** The clock and waits the generator uses (replaceable for tests). */
export interface LoopClock {
  /** Monotonic ns. */
  now(): number;
  /** Resolves after about `ms` (a timer). */
  sleep(ms: number): Promise<void>;
  /** Resolves after pending I/O callbacks ran. */
  yield(): Promise<void>;
}

export const REAL_CLOCK: LoopClock = {
  now: () => Bun.nanoseconds(),
  sleep: (ms) => Bun.sleep(ms),
  yield: () => new Promise<void>((resolve) => setImmediate(resolve)),
};

/** Scheduled send times of a run: t0 + i * 1e9 / rate ns for i below rate x duration. */
export function schedule(t0: number, rate: number, durationMs: number): number[] {
  const interval = 1e9 / rate;
  const count = Math.max(1, Math.floor((durationMs / 1000) * rate));
  return Array.from({ length: count }, (_, i) => t0 + i * interval);
}

/**
 * Runs `issue` on the schedule and measures every answer.
 *
 * @example
 * const r = await runOpenLoop(() => channel.request(route, payload), { rate: 5000, durationMs: 1000 });
 * r.fromScheduled.summary().p99; r.achieved;
 */
export async function runOpenLoop(issue: () => Promise<unknown>, spec: OpenLoopSpec, clock: LoopClock = REAL_CLOCK): Promise<OpenLoopResult> {
  const interval = 1e9 / spec.rate;
  const total = Math.max(1, Math.floor((spec.durationMs / 1000) * spec.rate));
  const maxOutstanding = spec.maxOutstanding ?? Math.max(10_000, Math.ceil(spec.rate * 2));
  const result: OpenLoopResult = {
    offered: spec.rate, scheduled: total, sent: 0, completed: 0, failed: 0, achieved: 0, saturated: false,
    fromScheduled: new LatencyHistogram(), fromSent: new LatencyHistogram(), sendLag: new LatencyHistogram(),
  };
  let outstanding = 0;
  let lastAnswer = 0;
  const settle = () => {
    outstanding--;
  };
  const t0 = clock.now() + 100_000; // the first send 0.1 ms from now
  let i = 0;
  while (i < total) {
    const now = clock.now();
    while (i < total && t0 + i * interval <= now) {
      if (outstanding >= maxOutstanding) {
        result.saturated = true;
        i = total;
        break;
      }
      const scheduled = t0 + i * interval;
      i++;
      const sent = clock.now();
      result.sendLag.record(sent - scheduled);
      result.sent++;
      outstanding++;
      issue().then(
        () => {
          const done = clock.now();
          result.fromScheduled.record(done - scheduled);
          result.fromSent.record(done - sent);
          result.completed++;
          lastAnswer = done;
          settle();
        },
        () => {
          result.failed++;
          settle();
        },
      );
    }
    if (i >= total) break;
    const wait = t0 + i * interval - clock.now();
    if (wait > 1_500_000) await clock.sleep((wait - 1_200_000) / 1e6);
    else await clock.yield();
  }
  // Answers still out: wait for them on the clock (1 ms steps: only `achieved` could notice).
  const deadline = clock.now() + (spec.drainMs ?? 5000) * 1e6;
  while (outstanding > 0 && clock.now() < deadline) await clock.sleep(1);
  if (outstanding > 0) result.saturated = true;
  result.achieved = lastAnswer > t0 ? (result.completed / (lastAnswer - t0)) * 1e9 : 0;
  return result;
}

/**
 * The closed-loop maximum: `concurrency` requests kept outstanding for `ms` (each answer
 * issues the next); answers per second.
 */
export async function closedLoopRate(issue: () => Promise<unknown>, concurrency: number, ms: number, clock: LoopClock = REAL_CLOCK): Promise<number> {
  const t0 = clock.now();
  const end = t0 + ms * 1e6;
  let completed = 0;
  const worker = async () => {
    while (clock.now() < end) {
      await issue();
      completed++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return (completed / (clock.now() - t0)) * 1e9;
}
