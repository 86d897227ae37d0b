/**
 * The vocabulary of supervision: what a child is (its spec), how it is handled once started
 * (its handle), and how it ended (its exit info). The supervisor knows children only through
 * these types, so OS processes, nested supervisors and test doubles all plug in the same way.
 */

/**
 * When a child that exited is restarted (OTP restart types).
 * - permanent: always.
 * - transient: only after an abnormal exit (non-zero code, or a signal the supervisor did not send).
 * - temporary: never.
 *
 * @example
 * const spec: ChildSpec = { id: "job", start, restart: RestartType.TRANSIENT };
 */
export const RestartType = {
  PERMANENT: "permanent",
  TRANSIENT: "transient",
  TEMPORARY: "temporary",
} as const;
export type RestartType = (typeof RestartType)[keyof typeof RestartType];

/**
 * Which children are restarted when one of them must be (OTP strategies).
 * - one_for_one: just that child.
 * - one_for_all: all children (the others are stopped first, in reverse order).
 * - rest_for_one: that child and the children after it in the spec list.
 *
 * @example
 * new Supervisor({ id: "pipeline", strategy: Strategy.REST_FOR_ONE, children: [source, parser, sink] });
 */
export const Strategy = {
  ONE_FOR_ONE: "one_for_one",
  ONE_FOR_ALL: "one_for_all",
  REST_FOR_ONE: "rest_for_one",
} as const;
export type Strategy = (typeof Strategy)[keyof typeof Strategy];

/** A worker does the work; a supervisor child is itself a supervisor (see `supervisorChild`). */
export const ChildType = {
  WORKER: "worker",
  SUPERVISOR: "supervisor",
} as const;
export type ChildType = (typeof ChildType)[keyof typeof ChildType];

/**
 * How a child ended. A process killed by a signal has `code: null` and `signal` set.
 *
 * @example
 * const crashed: ExitInfo = { code: null, signal: "SIGKILL", reason: "killed by SIGKILL" };
 */
export interface ExitInfo {
  code: number | null;
  signal: string | null;
  /** A short human explanation, e.g. "reached_max_restart_intensity" for a child supervisor. */
  reason?: string;
}

/** The state of one child as `Supervisor.status()` reports it. */
export type ChildState = "running" | "restarting" | "stopped" | "exited";

/**
 * One child in `Supervisor.status()`.
 *
 * @example
 * for (const child of sup.status()) console.log(child.id, child.state, child.pid, child.restarts);
 */
export interface ChildStatus {
  id: string;
  type: ChildType;
  pid?: number;
  state: ChildState;
  /** How many times the supervisor restarted this child (operator restarts excluded). */
  restarts: number;
  lastExit?: ExitInfo;
  /** For a running child supervisor: the status of its own children. */
  children?: ChildStatus[];
}

/**
 * A started child. `exited` resolves exactly once, however the child ended (it never rejects).
 *
 * @example
 * const handle: ChildHandle = {
 *   pid: proc.pid,
 *   exited: proc.exited.then(() => ({ code: proc.exitCode, signal: proc.signalCode })),
 *   stop: () => proc.kill("SIGTERM"),
 *   kill: () => proc.kill("SIGKILL"),
 * };
 */
export interface ChildHandle {
  pid?: number;
  exited: Promise<ExitInfo>;
  /** Asks the child to stop (e.g. SIGTERM). May be ignored: the supervisor kills after `shutdown` ms. */
  stop(): void;
  /** Ends the child at once (e.g. SIGKILL). */
  kill(): void;
  /** A nested supervisor reports its own children here, so `status()` shows the whole tree. */
  children?(): ChildStatus[];
  /** Where the time of this start went, when the child can tell: see StartupTimings. */
  startup?: StartupTimings;
}

/**
 * Where the time of one start went: for each step, in the order the child went through them,
 * the ms after `start()` was called at which it was done. An actor process reports `spawned`
 * (the process exists), `loaded` (Bun started and the actor host's code ran), `imported` (its
 * module), `listening` (registered, its socket open; init begins), `ready` (the supervisor
 * answered its ready) and `ready_line` (its ready line read, when start() resolves).
 *
 * @example
 * sup.onEvent((e) => {
 *   if (e.type === "started" && e.startup) console.log(e.child, e.startup); // { spawned: 0.3, loaded: 19.8, ... }
 * });
 */
export type StartupTimings = Readonly<Record<string, number>>;

/**
 * How to start and treat one child.
 *
 * @example
 * const spec: ChildSpec = {
 *   id: "ocr",
 *   start: processChild(["bun", "actors/ocr.ts"]),
 *   restart: "transient",
 *   shutdown: 2000,
 * };
 */
export interface ChildSpec {
  /** Unique among its siblings. */
  id: string;
  /** Starts the child; a rejection means it failed to start. */
  start: () => Promise<ChildHandle>;
  /** Default "permanent". */
  restart?: RestartType;
  /**
   * Ms to wait after `stop()` before `kill()`, or "brutal_kill" to kill at once. Default 5000 for
   * a worker and Infinity for a supervisor (as in OTP: its own children's shutdowns bound it).
   */
  shutdown?: number | "brutal_kill";
  /** Default "worker". */
  type?: ChildType;
}

/** Default ms a worker gets between `stop()` and `kill()`. */
export const DEFAULT_SHUTDOWN_MS = 5000;

/**
 * True when an exit the supervisor did not cause counts as normal: code 0 and no signal.
 *
 * @example
 * isNormalExit({ code: 0, signal: null }); // true
 * isNormalExit({ code: null, signal: "SIGKILL" }); // false
 */
export function isNormalExit(exit: ExitInfo): boolean {
  return exit.code === 0 && exit.signal === null;
}
