import { open } from "node:fs/promises";
import type { DeadLetter } from "../../mesh/peer-link.ts";
import type { Registry } from "../../mesh/registry.ts";
import { DashboardHistory, TimelineKind, type ActorCounters, type HistoryOptions, type TimelineEvent } from "./dashboard-history.ts";

/** Where a HistorySampler takes its samples from. */
export interface HistorySources {
  registry: Registry;
  /** Every actor's latest counters, from the supervisor (the gateway's `deps.stats`). */
  stats: () => Promise<Record<string, ActorCounters>>;
  /** The gateway's own dead letters (`node.deadLetters()`): each with its destination, code and reason. */
  deadLetters?: () => readonly DeadLetter[];
  /**
   * The supervisor's event log (`<mesh dir>/logs/supervisor.jsonl`): crashes with their exit
   * code or signal, restarts, escalations. Without it (events off) restarts are taken from
   * the registry's restart counts, without exit details.
   */
  supervisorLog?: string;
}

/** The most read from the supervisor log in one step; a longer backlog is read over the next steps. */
const READ_BYTES = 256 * 1024;
/** The longest a sample waits for the counters: a supervisor that does not answer must not stop the sampling for good. */
const STATS_TIMEOUT_MS = 5000;

/**
 * Fills a DashboardHistory every step: the actors' counters (for the rates and handling
 * times), the supervisor's lifecycle events (the restarts-and-crashes timeline) and the
 * gateway's dead letters. `start()` samples on a timer (the gateway process does this, so the
 * history is there when a page opens); `tick()` alone samples when a step has passed since the
 * last sample, for an app nobody started a timer for.
 *
 * @example
 * const sampler = new HistorySampler({ registry, stats, deadLetters: () => node.deadLetters(), supervisorLog: join(dir, "logs", "supervisor.jsonl") }).start();
 * sampler.history.view(); // what GET /api/history answers
 * sampler.stop();
 */
export class HistorySampler {
  readonly history: DashboardHistory;
  readonly #sources: HistorySources;
  readonly #log: SupervisorLogTail | undefined;
  #lastSample = 0;
  #running: Promise<void> | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** Dead letters already recorded: the node's list is bounded and drops its oldest, so identity tells new from old. */
  readonly #seenDeadLetters = new WeakSet<DeadLetter>();
  /** Restart counts last seen, by address: the timeline's source when there is no supervisor log. */
  readonly #restarts = new Map<string, number>();

  constructor(sources: HistorySources, options: HistoryOptions = {}) {
    this.#sources = sources;
    this.history = new DashboardHistory(options);
    this.#log = sources.supervisorLog === undefined ? undefined : new SupervisorLogTail(sources.supervisorLog, Date.now() - this.history.windowMs);
  }

  /** Samples now and then every step, until `stop()`. */
  start(): this {
    if (this.#timer) return this;
    void this.tick();
    this.#timer = setInterval(() => void this.tick(), this.history.stepMs);
    this.#timer.unref?.();
    return this;
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Takes a sample when a step has passed since the last one (a little early counts: timers drift). */
  async tick(): Promise<void> {
    if (this.#running) return this.#running;
    if (Date.now() - this.#lastSample < this.history.stepMs * 0.9) return;
    this.#lastSample = Date.now();
    this.#running = this.#sample().finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #sample(): Promise<void> {
    const actors = this.#sources.registry.snapshot().filter((e) => e.kind !== "client");
    let stats: Record<string, ActorCounters>;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("stats timed out")), STATS_TIMEOUT_MS)));
      stats = await Promise.race([this.#sources.stats(), late]);
    } catch {
      // The supervisor did not answer (it is going away): no sample this step, a gap in the charts.
      stats = {};
    } finally {
      clearTimeout(timer);
    }
    // Only the registry's actors: the supervisor keeps the last counters of instances that are gone.
    const current: Record<string, ActorCounters> = {};
    for (const e of actors) if (Object.hasOwn(stats, e.address)) current[e.address] = stats[e.address]!;
    if (Object.keys(stats).length > 0) this.history.record(Date.now(), current);

    if (this.#log) {
      for (const event of await this.#log.read()) this.history.addEvent(event);
    } else {
      for (const e of actors) {
        const before = this.#restarts.get(e.address);
        if (before !== undefined && e.restarts > before) {
          this.history.addEvent({ at: e.updatedAt, actor: e.address, kind: TimelineKind.RESTART, restarts: e.restarts, ...(e.pid !== undefined && { pid: e.pid }) });
        }
      }
      this.#restarts.clear();
      for (const e of actors) this.#restarts.set(e.address, e.restarts);
    }

    const letters = this.#sources.deadLetters?.() ?? [];
    const fresh: DeadLetter[] = [];
    for (let i = letters.length - 1; i >= 0 && !this.#seenDeadLetters.has(letters[i]!); i--) fresh.unshift(letters[i]!);
    for (const letter of fresh) {
      this.#seenDeadLetters.add(letter);
      this.history.addDeadLetter({
        at: letter.at,
        sender: letter.envelope.source_agent,
        target: letter.destination,
        code: letter.error.error_code,
        code_name: letter.error.error_name,
        reason: letter.error.detail,
        message_id: letter.envelope.message_id,
        trace_id: letter.envelope.trace_id,
        count: 1,
      });
    }
  }
}

/**
 * Reads the lines appended to the supervisor's event log since the last read, as timeline
 * events. Starts near the end of the file (the last READ_BYTES, events of the window only), so
 * a restarted gateway shows the recent past. A new file (rotation) is read from its start.
 */
class SupervisorLogTail {
  readonly #path: string;
  readonly #notBefore: number;
  #offset: number | undefined;
  #inode: number | undefined;
  /** The read starts inside a line: drop everything up to the first newline. */
  #midLine = false;

  constructor(path: string, notBefore: number) {
    this.#path = path;
    this.#notBefore = notBefore;
  }

  async read(): Promise<TimelineEvent[]> {
    let file;
    try {
      file = await open(this.#path, "r");
    } catch {
      return []; // not written yet, or events are off
    }
    try {
      const { size, ino } = await file.stat();
      if (this.#offset === undefined) {
        this.#offset = Math.max(0, size - READ_BYTES);
        this.#midLine = this.#offset > 0;
      } else if (ino !== this.#inode || size < this.#offset) {
        this.#offset = 0;
        this.#midLine = false;
      }
      this.#inode = ino;
      const length = Math.min(size - this.#offset, READ_BYTES);
      if (length <= 0) return [];
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await file.read(buffer, 0, length, this.#offset);
      const chunk = buffer.subarray(0, bytesRead);
      const end = chunk.lastIndexOf(10);
      if (end < 0) {
        // A line longer than a whole read is nothing the supervisor writes: skip it.
        if (bytesRead === READ_BYTES) {
          this.#offset += bytesRead;
          this.#midLine = true;
        }
        return [];
      }
      const start = this.#midLine ? chunk.indexOf(10) + 1 : 0;
      this.#midLine = false;
      this.#offset += end + 1;
      const events: TimelineEvent[] = [];
      for (const line of chunk.subarray(start, end).toString("utf8").split("\n")) {
        const event = timelineEventOf(line);
        if (event && event.at >= this.#notBefore) events.push(event);
      }
      return events;
    } catch {
      return [];
    } finally {
      await file.close();
    }
  }
}

/** A supervisor log line as a timeline event, or undefined for lines the timeline does not show. */
function timelineEventOf(line: string): TimelineEvent | undefined {
  let record: Record<string, any>;
  try {
    record = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof record !== "object" || record === null || typeof record.child !== "string" || typeof record.ts !== "number") return undefined;
  const base = { at: record.ts, actor: record.child, ...(typeof record.pid === "number" && { pid: record.pid }) };
  switch (record.event) {
    case "exited": {
      const exit = record.exit ?? {};
      return {
        ...base,
        kind: record.normal ? TimelineKind.EXIT : TimelineKind.CRASH,
        exit_code: typeof exit.code === "number" ? exit.code : null,
        signal: typeof exit.signal === "string" ? exit.signal : null,
        ...(typeof exit.reason === "string" && { reason: exit.reason }),
      };
    }
    case "restart":
      return { ...base, kind: TimelineKind.RESTART, ...(typeof record.restarts === "number" && { restarts: record.restarts }) };
    case "intensity_exceeded":
      return { ...base, kind: TimelineKind.GAVE_UP, reason: `more than ${record.intensity} restarts in ${record.period} ms: ${record.supervisor} gives up and escalates` };
  }
  return undefined;
}
