import { LATENCY_BUCKETS, type ActorStats } from "../observability/actor-metrics.ts";

/** One actor's counters as the supervisor relays them from its latest heartbeat (any field may be missing). */
export type ActorCounters = Partial<ActorStats> & { dead_letters?: number };

/** What happened to a child on the restarts-and-crashes timeline. */
export const TimelineKind = {
  /** It ended abnormally (a non-zero exit code or a signal, kill -9 included). */
  CRASH: "crash",
  /** It ended normally (exit code 0). */
  EXIT: "exit",
  /** Its supervisor started it again. */
  RESTART: "restart",
  /** Its supervisor gave up: too many restarts within the period (the supervisor escalates). */
  GAVE_UP: "gave_up",
} as const;
export type TimelineKind = (typeof TimelineKind)[keyof typeof TimelineKind];

/** One entry of the restarts-and-crashes timeline. */
export interface TimelineEvent {
  /** ms since epoch. */
  at: number;
  /** The child's address (an actor instance, a nested supervisor, the gateway). */
  actor: string;
  kind: TimelineKind;
  pid?: number;
  exit_code?: number | null;
  signal?: string | null;
  reason?: string;
  /** Restarts so far, on a restart. */
  restarts?: number;
}

/** One dead letter: an envelope its sender gave up on. */
export interface DeadLetterEntry {
  /** ms since epoch. */
  at: number;
  /** Who gave up on it: the gateway (with every detail), or an actor (from its heartbeat count). */
  sender: string;
  /** The destination, when known. */
  target?: string;
  code?: number;
  code_name?: string;
  reason: string;
  message_id?: string;
  trace_id?: string;
  /** How many envelopes the entry stands for (an actor's count can rise by several between samples). */
  count: number;
}

/** One actor's points, aligned with `HistoryView.times`; null where there is no point (no new heartbeat, nothing handled). */
export interface ActorSeries {
  /** Messages handled per second over the step. */
  rate: Array<number | null>;
  /** Handling time quantiles of the messages handled in the step, ms (estimated from the latency histogram). */
  p50_ms: Array<number | null>;
  p99_ms: Array<number | null>;
}

/** What `GET /api/history` answers: everything recorded after the `after` cursor it was asked with. */
export interface HistoryView {
  /** ms since epoch when the answer was made. */
  at: number;
  /** When this history started (the gateway process): a new value means the cursor is void, start again from 0. */
  started: number;
  step_ms: number;
  window_ms: number;
  /** The cursor: ask `?after=<seq>` next time to get only what is newer. */
  seq: number;
  /** Sample times, ms since epoch, oldest first. */
  times: number[];
  /** By actor address; an actor without any point in `times` is left out. */
  actors: Record<string, ActorSeries>;
  /** Oldest first. */
  timeline: TimelineEvent[];
  /** Oldest first. */
  dead_letters: DeadLetterEntry[];
  limits: { actors: number; timeline: number; dead_letters: number };
  /** Actors of the latest sample that had no room (more than `limits.actors` at once). */
  untracked_actors: number;
}

/** Sizes of a DashboardHistory. */
export interface HistoryOptions {
  /** Time between samples. Default 2 s. */
  stepMs?: number;
  /** How far back the series reach. Default 10 minutes. */
  windowMs?: number;
  /** Actors tracked at once. Default 100. */
  maxActors?: number;
  /** Timeline entries kept. Default 200. */
  maxEvents?: number;
  /** Dead-letter entries kept. Default 200. */
  maxDeadLetters?: number;
}

/** Longest reason kept: whatever an actor or a log says, one entry stays small. */
const MAX_REASON_CHARS = 300;

/** One tracked actor: its points in the ring, and the counters the next point is computed from. */
interface Track {
  rate: Float64Array;
  p50: Float64Array;
  p99: Float64Array;
  previous: ActorCounters | undefined;
  /** The sample number it last appeared in. */
  lastSeen: number;
}

/**
 * The dashboard's bounded rolling history: per actor, messages per second and p50/p99 handling
 * time at a fixed step over a fixed window (a ring buffer, NaN where there is no point), and
 * the latest restart/crash events and dead letters. Points come from the cumulative counters
 * actors send with their heartbeats: the difference between two snapshots over the time between
 * them (their own `at`), so the step and the heartbeat interval need not line up. Memory is
 * bounded whatever the churn: at most `maxActors` series (an actor gone from the samples makes
 * room for a new one, and is dropped once its points aged out), `maxEvents` and
 * `maxDeadLetters` entries, reasons cut at 300 characters.
 *
 * @example
 * const history = new DashboardHistory({ stepMs: 2000, windowMs: 600_000 });
 * history.record(Date.now(), await stats()); // every step
 * history.addEvent({ at: Date.now(), actor: "echo", kind: "crash", signal: "SIGKILL" });
 * const view = history.view(); // { times, actors: { echo: { rate, p50_ms, p99_ms } }, timeline, ... }
 * const newer = history.view(view.seq); // only what came after
 */
export class DashboardHistory {
  readonly stepMs: number;
  readonly windowMs: number;
  readonly capacity: number;
  readonly maxActors: number;
  readonly maxEvents: number;
  readonly maxDeadLetters: number;
  readonly started = Date.now();
  readonly #times: Float64Array;
  /** The cursor value of each sample slot. */
  readonly #seqs: Float64Array;
  #samples = 0;
  #seq = 0;
  #untracked = 0;
  readonly #tracks = new Map<string, Track>();
  #events: Array<{ seq: number; event: TimelineEvent }> = [];
  #deadLetters: Array<{ seq: number; entry: DeadLetterEntry }> = [];

  constructor(options: HistoryOptions = {}) {
    this.stepMs = options.stepMs ?? 2000;
    this.windowMs = options.windowMs ?? 10 * 60_000;
    this.capacity = Math.max(1, Math.ceil(this.windowMs / this.stepMs));
    this.maxActors = options.maxActors ?? 100;
    this.maxEvents = options.maxEvents ?? 200;
    this.maxDeadLetters = options.maxDeadLetters ?? 200;
    this.#times = new Float64Array(this.capacity);
    this.#seqs = new Float64Array(this.capacity);
  }

  /** Actors with a series now. */
  get actorCount(): number {
    return this.#tracks.size;
  }

  /**
   * One sample: every actor's latest counters, by address. An actor's first sample gives no
   * point (nothing to subtract) unless its process started after this history did; after a restart (a new `started_at`) the point covers the time
   * since the new process started. A rise of an actor's dead-letter count becomes a dead-letter entry.
   */
  record(at: number, stats: Record<string, ActorCounters>): void {
    const sample = this.#samples++;
    const slot = sample % this.capacity;
    this.#times[slot] = at;
    this.#seqs[slot] = ++this.#seq;
    // Series whose every point aged out hold nothing worth their memory.
    for (const [address, track] of this.#tracks) if (sample - track.lastSeen >= this.capacity) this.#tracks.delete(address);
    this.#untracked = 0;
    const present = new Set(Object.keys(stats));
    const seen = new Set<string>();
    for (const [address, counters] of Object.entries(stats)) {
      const track = this.#tracks.get(address) ?? this.#newTrack(address, sample, present);
      if (!track) {
        this.#untracked++;
        continue;
      }
      seen.add(address);
      const point = pointBetween(track.previous, counters, at, this.started);
      track.rate[slot] = point.rate;
      track.p50[slot] = point.p50;
      track.p99[slot] = point.p99;
      track.lastSeen = sample;
      track.previous = counters;
      if (point.deadLetters > 0) {
        this.addDeadLetter({ at, sender: address, reason: "given up after the maximum delivery attempts (the details are in that actor's deadLetters())", count: point.deadLetters });
      }
    }
    for (const [address, track] of this.#tracks) {
      if (seen.has(address)) continue;
      track.rate[slot] = track.p50[slot] = track.p99[slot] = NaN;
    }
  }

  addEvent(event: TimelineEvent): void {
    push(this.#events, { seq: ++this.#seq, event: { ...event, ...(event.reason !== undefined && { reason: cut(event.reason) }) } }, this.maxEvents);
  }

  addDeadLetter(entry: DeadLetterEntry): void {
    push(this.#deadLetters, { seq: ++this.#seq, entry: { ...entry, reason: cut(entry.reason) } }, this.maxDeadLetters);
  }

  /** Everything recorded after cursor `after` (0: all of it) that is still kept. */
  view(after = 0): HistoryView {
    const first = Math.max(0, this.#samples - this.capacity);
    const slots: number[] = [];
    for (let n = first; n < this.#samples; n++) if (this.#seqs[n % this.capacity]! > after) slots.push(n % this.capacity);
    const actors: Record<string, ActorSeries> = {};
    for (const [address, track] of this.#tracks) {
      if (!slots.some((s) => !Number.isNaN(track.rate[s]!) || !Number.isNaN(track.p50[s]!))) continue;
      actors[address] = { rate: slots.map((s) => orNull(track.rate[s]!, 100)), p50_ms: slots.map((s) => orNull(track.p50[s]!, 1000)), p99_ms: slots.map((s) => orNull(track.p99[s]!, 1000)) };
    }
    return {
      at: Date.now(),
      started: this.started,
      step_ms: this.stepMs,
      window_ms: this.windowMs,
      seq: this.#seq,
      times: slots.map((s) => this.#times[s]!),
      actors,
      timeline: this.#events.filter((e) => e.seq > after).map((e) => e.event),
      dead_letters: this.#deadLetters.filter((d) => d.seq > after).map((d) => d.entry),
      limits: { actors: this.maxActors, timeline: this.maxEvents, dead_letters: this.maxDeadLetters },
      untracked_actors: this.#untracked,
    };
  }

  /** A series for a new actor: when full, the one longest absent from the samples gives way (none is absent: no room). */
  #newTrack(address: string, sample: number, present: Set<string>): Track | undefined {
    if (this.#tracks.size >= this.maxActors) {
      let oldest: [string, Track] | undefined;
      for (const entry of this.#tracks) if (!present.has(entry[0]) && (!oldest || entry[1].lastSeen < oldest[1].lastSeen)) oldest = entry;
      if (!oldest) return undefined;
      this.#tracks.delete(oldest[0]);
    }
    const empty = () => new Float64Array(this.capacity).fill(NaN);
    const track: Track = { rate: empty(), p50: empty(), p99: empty(), previous: undefined, lastSeen: sample };
    this.#tracks.set(address, track);
    return track;
  }
}

/** The point between two snapshots of one actor's counters: NaN where there is none. */
function pointBetween(before: ActorCounters | undefined, now: ActorCounters, sampledAt: number, historyStarted: number): { rate: number; p50: number; p99: number; deadLetters: number } {
  const none = { rate: NaN, p50: NaN, p99: NaN, deadLetters: 0 };
  // The counters restart with the process: then the point covers the time since it started.
  const reset = before !== undefined && (now.started_at !== before.started_at || (now.latency_count ?? 0) < (before.latency_count ?? 0));
  // An actor's first sample counts from its process start only if that was in this history's
  // lifetime: for one that was up long before the gateway it would average over hours.
  const fromStart = now.started_at !== undefined && (reset || now.started_at >= historyStarted) ? { at: now.started_at } : undefined;
  const base: ActorCounters | undefined = before === undefined || reset ? fromStart : before;
  const deadLetters = before === undefined ? 0 : Math.max(0, (now.dead_letters ?? 0) - (reset ? 0 : (before.dead_letters ?? 0)));
  if (base === undefined) return { ...none, deadLetters };
  const seconds = ((now.at ?? sampledAt) - (base.at ?? sampledAt)) / 1000;
  // No heartbeat since the last sample: no new information, no point.
  if (!(seconds > 0)) return { ...none, deadLetters };
  const rate = Math.max(0, sumOf(now.handled) - sumOf(base.handled)) / seconds;
  const deltas = (now.latency_buckets ?? []).map((n, i) => n - (base.latency_buckets?.[i] ?? 0));
  return { rate, p50: quantileMs(0.5, deltas), p99: quantileMs(0.99, deltas), deadLetters };
}

/**
 * The q-quantile, in ms, of a histogram given as cumulative counts per LATENCY_BUCKETS bound
 * (then +Inf), interpolated linearly inside the bucket it falls in, as Prometheus'
 * histogram_quantile does; the +Inf bucket answers its lower bound. NaN for an empty histogram.
 */
function quantileMs(q: number, cumulative: number[]): number {
  const total = cumulative.at(-1) ?? 0;
  if (!(total > 0)) return NaN;
  const rank = q * total;
  const i = cumulative.findIndex((n) => n >= rank);
  if (i >= LATENCY_BUCKETS.length || i < 0) return LATENCY_BUCKETS.at(-1)! * 1000;
  const lower = i === 0 ? 0 : LATENCY_BUCKETS[i - 1]!;
  const below = i === 0 ? 0 : cumulative[i - 1]!;
  const inBucket = cumulative[i]! - below;
  const fraction = inBucket > 0 ? (rank - below) / inBucket : 1;
  return (lower + (LATENCY_BUCKETS[i]! - lower) * fraction) * 1000;
}

function sumOf(record: Record<string, number> | undefined): number {
  let total = 0;
  for (const n of Object.values(record ?? {})) total += n;
  return total;
}

function orNull(value: number, precision: number): number | null {
  return Number.isNaN(value) ? null : Math.round(value * precision) / precision;
}

function push<T>(list: T[], item: T, limit: number): void {
  list.push(item);
  if (list.length > limit) list.splice(0, list.length - limit);
}

function cut(text: string): string {
  return text.length > MAX_REASON_CHARS ? `${text.slice(0, MAX_REASON_CHARS - 1)}…` : text;
}
