/**
 * A supervisor with Erlang/OTP semantics: starts its children in order, restarts them by their
 * restart type and its strategy, gives up and escalates when they crash too often, and stops
 * them in reverse order. It knows children only as ChildSpec/ChildHandle (see child-spec.ts).
 */
import { isNormalExit, type ChildStatus, type ExitInfo, type Strategy } from "./child-spec.ts";
import { ChildSlot, type Running } from "./child-slot.ts";
import { RestartIntensity } from "./restart-intensity.ts";
import {
  alreadyStarted, childNotRunning, failedToStart, messageOf, supervisorUnavailable, unknownChild,
} from "./supervisor-errors.ts";
import { restartGroup } from "./strategy-group.ts";
import {
  EventHub, type StopReason, type SupervisorEndReason, type SupervisorEvent, type SupervisorListener,
} from "./supervisor-events.ts";
import { checkOptions, type SupervisorOptions } from "./supervisor-options.ts";

/** idle → starting → running → stopping → stopped; a supervisor is started at most once. */
export type SupervisorState = "idle" | "starting" | "running" | "stopping" | "stopped";

const END_EXITS: Record<SupervisorEndReason, ExitInfo> = {
  shutdown: { code: 0, signal: null, reason: "shutdown" },
  killed: { code: null, signal: "SIGKILL", reason: "killed" },
  reached_max_restart_intensity: { code: 1, signal: null, reason: "reached_max_restart_intensity" },
  failed_to_start_child: { code: 1, signal: null, reason: "failed_to_start_child" },
};

/**
 * @example
 * const sup = new Supervisor({
 *   id: "root",
 *   strategy: "one_for_one",
 *   children: [{ id: "echo", start: processChild([process.execPath, "actors/echo.ts"]) }],
 * });
 * sup.onEvent((e) => console.log(e.type, e.child));
 * await sup.start();
 * const ended = await sup.exited; // { code: 1, reason: "reached_max_restart_intensity" } if it gave up
 */
export class Supervisor {
  readonly id: string;
  readonly strategy: Strategy;
  /** Resolves once the supervisor has ended: stopped, killed, failed to start, or gave up. */
  readonly exited: Promise<ExitInfo>;
  #slots: ChildSlot[];
  #intensity: RestartIntensity;
  #state: SupervisorState = "idle";
  #hub = new EventHub<SupervisorEvent>();
  #queue: Promise<unknown> = Promise.resolve();
  /** Each restarting child's latest restart, the one that starts it (an older one, overtaken, does not). */
  #turns = new Map<ChildSlot, symbol>();
  #endExit: (exit: ExitInfo) => void;
  #stopping: Promise<void> | undefined;
  #brutal = false;
  /** Resolves when an end is asked for: cuts backoff waits short. */
  #ending = Promise.withResolvers<void>();
  /** Resolves on kill(): cuts shutdown waits short. */
  #hurry = Promise.withResolvers<void>();

  constructor(options: SupervisorOptions) {
    checkOptions(options);
    this.id = options.id;
    this.strategy = options.strategy ?? "one_for_one";
    this.#intensity = new RestartIntensity(options.intensity, options.period);
    const backoff = options.backoff === false
      ? undefined
      : { ...options.backoff, resetAfterMs: options.backoff?.resetAfterMs ?? this.#intensity.period };
    this.#slots = options.children.map((spec) => new ChildSlot(spec, backoff));
    const { promise, resolve } = Promise.withResolvers<ExitInfo>();
    this.exited = promise;
    this.#endExit = resolve;
  }

  get state(): SupervisorState {
    return this.#state;
  }

  /**
   * Starts the children in order. If one fails to start, the started ones are stopped in
   * reverse order and this rejects with a HermesError (UNAVAILABLE, reason "failed_to_start_child").
   * It also rejects (reason "stopped while starting") when stop() is called before it is done.
   */
  start(): Promise<void> {
    if (this.#state !== "idle") return Promise.reject(alreadyStarted(this.id));
    this.#state = "starting";
    return this.#serial(async () => {
      for (const slot of this.#slots) {
        // stop() came first: its turn comes next and stops what did start.
        if (this.#state !== "starting") throw supervisorUnavailable(this.id, "stopped while starting");
        try {
          await this.#startSlot(slot);
        } catch (error) {
          slot.lastExit = { code: null, signal: null, reason: `failed to start: ${messageOf(error)}` };
          await this.#stopAll("start_failed");
          this.#end("failed_to_start_child");
          throw failedToStart(this.id, slot.id, error);
        }
      }
      if (this.#state === "starting") this.#state = "running";
    });
  }

  /** Stops the children in reverse order (each: stop, wait its shutdown ms, kill), then ends. */
  stop(): Promise<void> {
    if (this.#stopping) return this.#stopping;
    if (this.#state === "idle") this.#end("shutdown");
    if (this.#state === "stopped") return Promise.resolve();
    this.#state = "stopping";
    this.#ending.resolve();
    this.#stopping = this.#serial(async () => {
      if (this.#state === "stopped") return; // ended meanwhile (gave up)
      await this.#stopAll("shutdown");
      this.#end(this.#brutal ? "killed" : "shutdown");
    });
    return this.#stopping;
  }

  /** Like stop(), but every child is killed at once, including any already being stopped. */
  kill(): Promise<void> {
    this.#brutal = true;
    this.#hurry.resolve();
    return this.stop();
  }

  /** Each child's id, pid, state, restart count and last exit, in spec order. */
  status(): ChildStatus[] {
    return this.#slots.map((slot) => slot.status());
  }

  /**
   * An operator restart of one child: stopped (as in stop()) if running, then started again.
   * Not a failure: no strategy, no intensity, no backoff.
   */
  restartChild(id: string): Promise<void> {
    const slot = this.#slot(id);
    return this.#serial(async () => {
      this.#assertRunning();
      if (slot.current) await this.#stopSlot(slot, "operator");
      try {
        await this.#startSlot(slot);
      } catch (error) {
        slot.lastExit = { code: null, signal: null, reason: `failed to start: ${messageOf(error)}` };
        throw failedToStart(this.id, id, error);
      }
    });
  }

  /**
   * Kills a child at once (SIGKILL for a process), e.g. one that stopped answering heartbeats.
   * Its exit is then handled exactly like a crash. Resolves once it has exited.
   */
  async killChild(id: string): Promise<void> {
    const running = this.#slot(id).current;
    if (!running) throw childNotRunning(this.id, id);
    running.handle.kill();
    await running.handle.exited;
  }

  /** Calls `listener` with every event from now on; returns the unsubscribe function. */
  onEvent(listener: SupervisorListener): () => void {
    return this.#hub.on(listener);
  }

  /** The events from now on as an async iterator; it ends after the supervisor's final "stopped". */
  events(): AsyncIterableIterator<SupervisorEvent> {
    return this.#hub.iterate();
  }

  // Every state change runs here, one at a time, so a crash never interleaves with a restart or stop.
  #serial<T>(operation: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(operation);
    this.#queue = run.catch(() => {});
    return run;
  }

  async #startSlot(slot: ChildSlot): Promise<void> {
    const { handle } = await slot.start((running, exit) => void this.#serial(() => this.#onExit(slot, running, exit)));
    this.#emit({
      type: "started", child: slot.id, ...(handle.pid !== undefined && { pid: handle.pid }), restarts: slot.restarts,
      ...(handle.startup && { startup: handle.startup }),
    });
  }

  async #stopSlot(slot: ChildSlot, reason: StopReason): Promise<void> {
    const pid = slot.current?.handle.pid;
    const exit = await slot.stop(this.#brutal, this.#hurry.promise);
    this.#emit({ type: "stopped", child: slot.id, ...(pid !== undefined && { pid }), exit, reason });
  }

  /** Reverse spec order; children waiting for a restart will not get it. */
  async #stopAll(reason: StopReason): Promise<void> {
    // Restarts still waiting out their backoff will not run.
    for (const failed of this.#turns.keys()) this.#emit({ type: "restart_abandoned", child: failed.id, reason: "stopping", started: [] });
    this.#turns.clear();
    for (const slot of [...this.#slots].reverse()) {
      if (slot.current) await this.#stopSlot(slot, reason);
      else if (slot.state === "restarting") slot.state = "stopped";
    }
  }

  async #onExit(slot: ChildSlot, running: Running, exit: ExitInfo): Promise<void> {
    if (slot.current !== running || running.expected) return; // the supervisor stopped it: not a failure
    slot.current = undefined;
    slot.lastExit = exit;
    const normal = isNormalExit(exit);
    const willRestart = this.#state === "running" &&
      (slot.restart === "permanent" || (slot.restart === "transient" && !normal));
    slot.state = willRestart ? "restarting" : "exited";
    const pid = running.handle.pid;
    this.#emit({ type: "exited", child: slot.id, ...(pid !== undefined && { pid }), exit, normal, willRestart });
    if (willRestart) await this.#restart(slot);
  }

  /**
   * Restarts `failed` and its strategy group; a child failing to start counts as another crash.
   * The group's running siblings are stopped at once, as in OTP; a backoff is then waited out of
   * turn, so that the other children's exits and restarts go on meanwhile (a chaos run,
   * bench/chaos.ts, had every child of a tree down for tens of seconds while each waited behind
   * the one before it), and what is still down of the group is started in turn after it.
   */
  async #restart(failed: ChildSlot): Promise<void> {
    if (this.#state !== "running") return;
    if (this.#intensity.record()) return this.#giveUp(failed);
    const group = restartGroup(this.strategy, this.#slots.length, this.#slots.indexOf(failed)).map((i) => this.#slots[i]!);
    // As in OTP, temporary siblings are stopped with the group but never restarted.
    const restarting = group.filter((slot) => slot === failed || slot.restart !== "temporary");
    const delayMs = failed.restartDelay();
    failed.state = "restarting";
    // A restart of this child still waiting out its backoff is overtaken by this one (and will not start anything).
    if (this.#turns.delete(failed)) this.#emit({ type: "restart_abandoned", child: failed.id, reason: "superseded", started: [] });
    this.#emit({
      type: "restarting", child: failed.id, strategy: this.strategy, delayMs,
      recentRestarts: this.#intensity.count(), children: restarting.map((s) => s.id),
    });
    for (const slot of [...group].reverse()) {
      if (slot === failed || !slot.current) continue;
      await this.#stopSlot(slot, "sibling_restart");
      if (restarting.includes(slot)) slot.state = "restarting";
    }
    const turn = Symbol(failed.id);
    this.#turns.set(failed, turn);
    if (delayMs <= 0) return this.#startRestarting(failed, restarting, turn);
    void this.#pause(delayMs).then(() => this.#serial(() => this.#startRestarting(failed, restarting, turn)));
  }

  /**
   * Starts what of a restart's group is still waiting for it, unless a newer restart of the same
   * child took over (it came back meanwhile, by an operator's restartChild or a sibling's
   * restart, and crashed again); what came back meanwhile, or exited for good, is left alone.
   */
  async #startRestarting(failed: ChildSlot, restarting: ChildSlot[], turn: symbol): Promise<void> {
    if (this.#turns.get(failed) !== turn) return; // superseded, or the supervisor is stopping: said when that happened
    this.#turns.delete(failed);
    if (this.#state !== "running") return this.#emit({ type: "restart_abandoned", child: failed.id, reason: "stopping", started: [] });
    const due = restarting.filter((slot) => slot.state === "restarting" && !slot.current);
    if (due.length === 0) return this.#emit({ type: "restart_abandoned", child: failed.id, reason: "came_back", started: [] });
    const next = await this.#startGroup(due);
    if (!next) return this.#emit({ type: "restarted", child: failed.id, children: due.map((s) => s.id) });
    this.#emit({ type: "restart_abandoned", child: failed.id, reason: "start_failed", started: due.slice(0, due.indexOf(next)).map((s) => s.id) });
    await this.#restart(next);
  }

  /** Starts `group` in order; returns the child that failed to start, if one did. */
  async #startGroup(group: ChildSlot[]): Promise<ChildSlot | undefined> {
    for (const slot of group) {
      if (this.#state !== "running") return undefined;
      if (slot.current) continue;
      try {
        slot.restarts++;
        await this.#startSlot(slot);
      } catch (error) {
        slot.restarts--; // counted only once it is up
        slot.state = "restarting";
        slot.lastExit = { code: null, signal: null, reason: `failed to start: ${messageOf(error)}` };
        return slot;
      }
    }
    return undefined;
  }

  /** Too many restarts: stop everything in reverse order and end, which the parent sees as a crash. */
  async #giveUp(failed: ChildSlot): Promise<void> {
    this.#state = "stopping";
    failed.state = "exited"; // it ended on its own, and will not be restarted
    const { intensity, period } = this.#intensity;
    this.#emit({ type: "intensity_exceeded", child: failed.id, intensity, period });
    await this.#stopAll("max_restart_intensity");
    this.#end("reached_max_restart_intensity");
  }

  #end(reason: SupervisorEndReason): void {
    if (this.#state === "stopped") return;
    this.#state = "stopped";
    const exit = END_EXITS[reason];
    this.#emit({ type: "stopped", reason, exit });
    this.#hub.close();
    this.#ending.resolve();
    this.#endExit(exit);
  }

  #emit(event: DistributiveOmit<SupervisorEvent, "supervisor">): void {
    this.#hub.emit({ ...event, supervisor: this.id } as SupervisorEvent);
  }

  /** Waits `ms`, or less if the supervisor is asked to end meanwhile. */
  async #pause(ms: number): Promise<void> {
    if (ms <= 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([new Promise((resolve) => (timer = setTimeout(resolve, ms))), this.#ending.promise]);
    clearTimeout(timer);
  }

  #slot(id: string): ChildSlot {
    const slot = this.#slots.find((s) => s.id === id);
    if (slot) return slot;
    throw unknownChild(this.id, id, this.#slots.map((s) => s.id));
  }

  #assertRunning(): void {
    if (this.#state !== "running") throw supervisorUnavailable(this.id, `supervisor ${this.#state}`);
  }
}

type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;
