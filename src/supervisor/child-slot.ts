/**
 * A supervisor's record of one child: its spec with defaults applied, the running instance if
 * any, and the bookkeeping `status()` reports. Internal to the supervisor: not part of the
 * public API.
 */
import { Backoff, type BackoffOptions } from "./backoff.ts";
import {
  DEFAULT_SHUTDOWN_MS,
  type ChildHandle, type ChildSpec, type ChildState, type ChildStatus, type ChildType, type ExitInfo, type RestartType,
} from "./child-spec.ts";
import { terminate } from "./shutdown.ts";

/** One started instance. `expected` marks an exit the supervisor itself asked for. */
export interface Running {
  handle: ChildHandle;
  expected: boolean;
}

export class ChildSlot {
  readonly spec: ChildSpec;
  readonly id: string;
  readonly restart: RestartType;
  readonly type: ChildType;
  readonly shutdown: number | "brutal_kill";
  readonly backoff: Backoff | undefined;
  state: ChildState = "stopped";
  restarts = 0;
  lastExit: ExitInfo | undefined;
  current: Running | undefined;
  /** When this child's last restart was decided (ms, Date.now()). */
  #lastRestartAt = -Infinity;

  constructor(spec: ChildSpec, backoff: BackoffOptions | undefined) {
    this.spec = spec;
    this.id = spec.id;
    this.restart = spec.restart ?? "permanent";
    this.type = spec.type ?? "worker";
    // OTP gives a child supervisor infinite time: its own children's shutdowns bound it.
    this.shutdown = spec.shutdown ?? (this.type === "supervisor" ? Infinity : DEFAULT_SHUTDOWN_MS);
    this.backoff = backoff && new Backoff(backoff);
  }

  /**
   * How long to wait before restarting this child now. Its first restart after a quiet period
   * (the backoff's `resetAfterMs`, by default the supervisor's intensity period) is immediate: a
   * one-off crash costs no more than a new process. Each further restart within that period
   * waits the backoff's next delay (`initialMs`, then growing), so a crash loop does not spin.
   */
  restartDelay(now = Date.now()): number {
    const quiet = now - this.#lastRestartAt >= (this.backoff?.resetAfterMs ?? Infinity);
    this.#lastRestartAt = now;
    if (!this.backoff) return 0;
    if (!quiet) return this.backoff.next(now);
    this.backoff.reset();
    return 0;
  }

  /** Starts a new instance; `onExit` hears of its exit, whoever caused it. */
  async start(onExit: (running: Running, exit: ExitInfo) => void): Promise<Running> {
    const raw = await this.spec.start();
    // A custom handle's exited must never reject; a rejection is an exit like any other.
    const exited = Promise.resolve(raw.exited).then(
      (exit) => exit,
      (error): ExitInfo => ({ code: null, signal: null, reason: `exited with error: ${String(error)}` }),
    );
    const handle: ChildHandle = {
      pid: raw.pid,
      exited,
      stop: () => raw.stop(),
      kill: () => raw.kill(),
      ...(raw.startup && { startup: raw.startup }),
      ...(raw.children && { children: () => raw.children!() }),
    };
    const running: Running = { handle, expected: false };
    this.current = running;
    this.state = "running";
    void exited.then((exit) => onExit(running, exit));
    return running;
  }

  /** Stops the running instance (an expected exit) and resolves with how it ended. */
  async stop(brutal: boolean, hurry: Promise<void>): Promise<ExitInfo> {
    const running = this.current!;
    running.expected = true;
    const exit = await terminate(running.handle, brutal ? "brutal_kill" : this.shutdown, hurry);
    this.current = undefined;
    this.lastExit = exit;
    this.state = "stopped";
    return exit;
  }

  status(): ChildStatus {
    const handle = this.current?.handle;
    const children = handle?.children?.();
    return {
      id: this.id,
      type: this.type,
      ...(handle?.pid !== undefined && { pid: handle.pid }),
      state: this.state,
      restarts: this.restarts,
      ...(this.lastExit && { lastExit: this.lastExit }),
      ...(children && { children }),
    };
  }
}
