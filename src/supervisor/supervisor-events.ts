/**
 * What a supervisor tells the world: a discriminated union of lifecycle events, delivered to
 * listeners and to any number of async iterators.
 */
import type { ExitInfo, StartupTimings, Strategy } from "./child-spec.ts";

/** Why the supervisor stopped a child (these stops are never failures). */
export type StopReason = "shutdown" | "sibling_restart" | "max_restart_intensity" | "operator" | "start_failed";

/** Why a restart that was decided did not run to its end (see `restart_abandoned`). */
export type RestartAbandonedReason = "superseded" | "came_back" | "stopping" | "start_failed";

/** Why a supervisor itself ended. */
export type SupervisorEndReason = "shutdown" | "killed" | "reached_max_restart_intensity" | "failed_to_start_child";

/**
 * Every event names its supervisor; `child` is set for events about one child.
 * - started: a child is up (initial start, restart, or operator restart); `startup` says where
 *   the time went when the child reports it (an actor process does, see StartupTimings).
 * - exited: a child ended on its own or by `killChild` (not by the supervisor stopping it).
 * - restarting: a restart was decided; the supervisor waits `delayMs` (0 for a child's first
 *   restart after a quiet period, see `SupervisorOptions.backoff`), then restarts `children`.
 *   `recentRestarts` counts this one and the others within the intensity period.
 * - restarted: the restart of `children` (in order) is done.
 * - restart_abandoned: a restart that was decided did not run to its end: `superseded` (the child
 *   came back meanwhile and crashed again, and a newer restart took over), `came_back` (every
 *   child of the group was back or had exited for good when its wait ended), `stopping` (the
 *   supervisor is ending), or `start_failed` (a child of the group failed to start, and its own
 *   restart takes over from here). `started` lists the children it did start. Every `restarting`
 *   is followed by exactly one `restarted` or `restart_abandoned` for the same child.
 * - intensity_exceeded: too many restarts; all children are being stopped and the supervisor escalates.
 * - stopped: with `child`, the supervisor stopped that child; without, the supervisor itself ended.
 *
 * @example
 * for await (const e of sup.events()) {
 *   if (e.type === "restarting") console.log(`${e.child} crashed; restarting ${e.children} in ${e.delayMs} ms`);
 * }
 */
export type SupervisorEvent =
  | { type: "started"; supervisor: string; child: string; pid?: number; restarts: number; startup?: StartupTimings }
  | { type: "exited"; supervisor: string; child: string; pid?: number; exit: ExitInfo; normal: boolean; willRestart: boolean }
  | { type: "restarting"; supervisor: string; child: string; strategy: Strategy; delayMs: number; recentRestarts: number; children: string[] }
  | { type: "restarted"; supervisor: string; child: string; children: string[] }
  | { type: "restart_abandoned"; supervisor: string; child: string; reason: RestartAbandonedReason; started: string[] }
  | { type: "intensity_exceeded"; supervisor: string; child: string; intensity: number; period: number }
  | { type: "stopped"; supervisor: string; child: string; pid?: number; exit: ExitInfo; reason: StopReason }
  | { type: "stopped"; supervisor: string; child?: undefined; reason: SupervisorEndReason; exit: ExitInfo };

export type SupervisorEventType = SupervisorEvent["type"];

/** A listener for `Supervisor.onEvent`. */
export type SupervisorListener = (event: SupervisorEvent) => void;

/**
 * Fan-out of events to listeners and iterators. Iterators buffer what they have not consumed
 * yet and end once the hub is closed and their buffer is drained.
 *
 * @example
 * const hub = new EventHub<number>();
 * const off = hub.on((n) => console.log(n));
 * hub.emit(1);
 * off();
 */
export class EventHub<T> {
  #listeners = new Set<(event: T) => void>();
  #enders = new Set<() => void>();
  #closed = false;

  /** Subscribes `listener`; returns the function that unsubscribes it. */
  on(listener: (event: T) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(event: T): void {
    if (this.#closed) return;
    for (const listener of [...this.#listeners]) {
      // A faulty listener must not break the supervisor that is emitting.
      try {
        listener(event);
      } catch {
        // ignored on purpose, see above
      }
    }
  }

  /** Ends every iterator (after it drained its buffer) and drops the listeners. */
  close(): void {
    this.#closed = true;
    this.#listeners.clear();
    for (const end of [...this.#enders]) end();
    this.#enders.clear();
  }

  /** The events emitted from now on, until `close()`. Breaking out of the loop unsubscribes. */
  iterate(): AsyncIterableIterator<T> {
    const buffer: T[] = [];
    let wake: (() => void) | undefined;
    let done = this.#closed;
    const end = () => {
      done = true;
      wake?.();
    };
    const unlisten = done ? () => {} : this.on((event) => {
      buffer.push(event);
      wake?.();
    });
    if (!done) this.#enders.add(end);
    const off = () => {
      unlisten();
      this.#enders.delete(end);
    };
    const iterator: AsyncIterableIterator<T> = {
      async next(): Promise<IteratorResult<T>> {
        while (buffer.length === 0 && !done) await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        if (buffer.length > 0) return { value: buffer.shift()!, done: false };
        return { value: undefined, done: true };
      },
      async return(): Promise<IteratorResult<T>> {
        off();
        done = true;
        buffer.length = 0;
        wake?.();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }
}
