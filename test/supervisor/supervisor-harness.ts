/**
 * Test harness for supervisors of real fixture processes: builds child specs, reads the shared
 * log the fixtures append to (start and stop order as the processes saw it), records events,
 * and on dispose kills every supervisor and every fixture process it saw, even after a failure.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ChildSpec, RestartType } from "../../src/supervisor/child-spec.ts";
import { processChild } from "../../src/supervisor/process-child.ts";
import type { SupervisorEvent } from "../../src/supervisor/supervisor-events.ts";
import type { SupervisorOptions } from "../../src/supervisor/supervisor-options.ts";
import { Supervisor } from "../../src/supervisor/supervisor.ts";
import { BUN, tempDir, waitFor } from "../helpers.ts";

export const FIXTURE = join(import.meta.dir, "child-fixture.ts");

/** One line of the fixtures' log: "up a 1234". */
export interface LogEntry {
  event: "up" | "down" | "term-ignored";
  name: string;
  pid: number;
}

export interface FixtureOptions {
  restart?: RestartType;
  shutdown?: number | "brutal_kill";
  /** Fixture flags, e.g. ["ignore-term"] or ["exit=1"]. */
  flags?: string[];
}

export class Harness implements AsyncDisposable {
  readonly dir = tempDir("hm-sup-");
  readonly logFile = join(this.dir.path, "children.log");
  /** Every event of every supervisor made by `supervisor()`. */
  readonly events: SupervisorEvent[] = [];
  #supervisors: Supervisor[] = [];

  /** A child spec running the fixture as `name`. */
  child(name: string, options: FixtureOptions = {}): ChildSpec {
    return {
      id: name,
      // Ready once it printed "up": by then its "up" line is in the log.
      start: processChild([BUN, FIXTURE, name, this.logFile, ...(options.flags ?? [])], {
        ready: (line) => line.startsWith("up "),
      }),
      ...(options.restart && { restart: options.restart }),
      ...(options.shutdown !== undefined && { shutdown: options.shutdown }),
    };
  }

  /** A supervisor whose events are recorded and which is killed on dispose. */
  supervisor(options: SupervisorOptions): Supervisor {
    const supervisor = new Supervisor(options);
    supervisor.onEvent((event) => this.events.push(event));
    this.#supervisors.push(supervisor);
    return supervisor;
  }

  /** Records the events of a nested supervisor too (pass as `supervisorChild({ onEvent })`). */
  readonly record = (event: SupervisorEvent): void => void this.events.push(event);

  log(): LogEntry[] {
    if (!existsSync(this.logFile)) return [];
    return readFileSync(this.logFile, "utf8").split("\n").filter(Boolean).map((line) => {
      const [event, name, pid] = line.split(" ");
      return { event: event as LogEntry["event"], name: name!, pid: Number(pid) };
    });
  }

  /** "up a", "down c", ... in log order, from entry `from` on. */
  trace(from = 0): string[] {
    return this.log().slice(from).map((e) => `${e.event} ${e.name}`);
  }

  /** Pids that logged "up" as `name`, oldest first. */
  pids(name: string): number[] {
    return this.log().filter((e) => e.event === "up" && e.name === name).map((e) => e.pid);
  }

  /** Waits until `name` has logged its `count`th "up" and returns that pid. */
  async upCount(name: string, count: number, timeoutMs = 5000): Promise<number> {
    await waitFor(() => this.pids(name).length >= count, `'${name}' up ${count} time(s)`, timeoutMs);
    return this.pids(name)[count - 1]!;
  }

  /** Waits for an event matching `match` among those recorded from index `from` on. */
  async event(match: (e: SupervisorEvent) => boolean, what: string, from = 0, timeoutMs = 5000): Promise<SupervisorEvent> {
    await waitFor(() => this.events.slice(from).some(match), what, timeoutMs);
    return this.events.slice(from).find(match)!;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.all(this.#supervisors.map((s) => s.kill()));
    for (const { pid } of this.log()) if (isFixture(pid)) process.kill(pid, "SIGKILL");
    this.dir[Symbol.dispose]();
  }
}

/** True while `pid` is alive (zombies included until reaped). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Only kill a pid that is still one of our fixtures: a dead fixture's pid may have been reused.
function isFixture(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("child-fixture.ts");
  } catch {
    return false;
  }
}
