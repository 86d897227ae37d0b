/**
 * A supervised child that is a real OS process, spawned with Bun.spawn on Bun and with
 * node:child_process on Deno (a supervisor on Deno, docs/deno.md).
 */
import { spawn as nodeSpawn } from "node:child_process";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { ChildHandle, ExitInfo } from "./child-spec.ts";

/** Options of `processChild`. */
export interface ProcessChildOptions {
  /**
   * Added to (and overriding) the parent's environment; an undefined value removes a variable.
   * A function is called at each start (a restarted child gets fresh values, such as a secret).
   */
  env?: Record<string, string | undefined> | (() => Record<string, string | undefined>);
  cwd?: string;
  /** Called with each stdout line (without the newline). Without it stdout is inherited. */
  onStdout?(line: string): void;
  /** Called with each stderr line (without the newline). Without it stderr is inherited. */
  onStderr?(line: string): void;
  /**
   * When given, start() resolves only once a stdout line passes this test, as OTP's start
   * waits for the child's init: the next sibling then starts after this one is ready.
   */
  ready?(line: string): boolean;
  /**
   * Starts the process in Bun.spawn's (or node:child_process's) place, or returns undefined to have it spawned as usual:
   * how a mesh hands a start to a standby actor host (standby-host.ts). `env` is the whole
   * environment the process is to have. What it returns must pipe stdout and stderr.
   */
  spawn?(cmd: string[], options: { env: Record<string, string>; cwd?: string }): SpawnedProcess | undefined;
  /**
   * Called with the pid right after the process is spawned, before it is ready: start() may
   * take a while to resolve, and the pid is useful meanwhile (to show it, or to kill it).
   */
  onSpawn?(pid: number): void;
  /**
   * Called after the spawn with the pid: a promise that resolves once the child is ready by
   * other means than its output (a mesh hears it from the control plane, which comes before the
   * ready line). start() resolves on this or the `ready` line, whichever comes first.
   */
  readyWhen?(pid: number): Promise<void>;
  /** Ms to wait for the ready line before killing the process and rejecting. Default 5000. */
  readyTimeoutMs?: number;
  /**
   * What start() errors call the process, e.g. "actor echo#0". Default its command line, which
   * for a process started through a wrapper (the actor host) is long and says little.
   */
  name?: string;
}

/**
 * A `ChildSpec.start` that spawns `cmd` as an OS process: `stop()` sends SIGTERM, `kill()`
 * SIGKILL, and `exited` resolves with the exit code or signal. The process gets no stdin.
 * A command that cannot be spawned (e.g. not found), or that exits or times out before its
 * `ready` line, makes start() reject.
 *
 * @example
 * const spec: ChildSpec = {
 *   id: "echo",
 *   start: processChild([process.execPath, "actors/echo.ts"], {
 *     ready: (line) => line.startsWith("ready "),
 *     onStderr: (line) => log.warn(line),
 *   }),
 * };
 */
export function processChild(cmd: string[], options: ProcessChildOptions = {}): () => Promise<ChildHandle> {
  return async () => {
    const { ready, onStdout } = options;
    const readiness = Promise.withResolvers<void>();
    const stdoutLine = ready
      ? (line: string) => {
          onStdout?.(line);
          if (ready(line)) readiness.resolve();
        }
      : onStdout;
    const env = environment(typeof options.env === "function" ? options.env() : options.env);
    const handed = options.spawn?.(cmd, { env, ...(options.cwd !== undefined && { cwd: options.cwd }) });
    const how = { cwd: options.cwd, env, stdout: stdoutLine ? "pipe" : "inherit", stderr: options.onStderr ? "pipe" : "inherit" } as const;
    const proc: SpawnedProcess = handed ?? (typeof Bun === "undefined" ? await spawnWithNode(cmd, how) : Bun.spawn(cmd, { ...how, stdin: "ignore" }));
    options.onSpawn?.(proc.pid);
    // Drain the pipes before reporting the exit, so the last lines reach the callbacks first.
    // A handed-over process always pipes both: drained even without a callback, or it would block.
    const drained = Promise.all([
      (stdoutLine || handed) && forEachLine(proc.stdout as AsyncIterable<Uint8Array>, stdoutLine ?? (() => {})),
      (options.onStderr || handed) && forEachLine(proc.stderr as AsyncIterable<Uint8Array>, options.onStderr ?? (() => {})),
    ]).catch(() => {});
    const exited = proc.exited.then(async (): Promise<ExitInfo> => {
      await drained;
      return describeExit(proc.exitCode, proc.signalCode === null ? null : String(proc.signalCode));
    });
    if (options.readyWhen) void options.readyWhen(proc.pid).then(() => readiness.resolve(), () => {});
    if (ready || options.readyWhen) await waitReady(proc, readiness.promise, exited, options.readyTimeoutMs ?? 5000, options.name ?? cmd.join(" "));
    return {
      pid: proc.pid,
      exited,
      // kill() on a process that already exited is a no-op in Bun (and node:child_process), so no guard is needed.
      stop: () => proc.kill("SIGTERM"),
      kill: () => proc.kill("SIGKILL"),
    };
  };
}

/**
 * What processChild needs of a started process: Bun.spawn's, spawnWithNode's, or one a `spawn`
 * option handed over. A piped stdout or stderr is read as chunks of bytes.
 */
export interface SpawnedProcess {
  readonly pid: number;
  /** Resolves once the process has exited (its pipes may still hold output). */
  readonly exited: Promise<unknown>;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | number | null;
  kill(signal?: NodeJS.Signals | number): void;
  readonly stdout: AsyncIterable<Uint8Array> | number | undefined | null;
  readonly stderr: AsyncIterable<Uint8Array> | number | undefined | null;
}

/**
 * Spawns `cmd` with node:child_process, as Bun.spawn would (no stdin): for a supervisor on
 * Deno, which has no Bun.spawn. Resolves once the process runs; rejects when it cannot be
 * spawned (Bun.spawn throws then; node:child_process reports it as an event, after the call).
 */
async function spawnWithNode(
  cmd: string[],
  options: { cwd: string | undefined; env: Record<string, string>; stdout: "pipe" | "inherit"; stderr: "pipe" | "inherit" },
): Promise<SpawnedProcess> {
  const child = nodeSpawn(cmd[0]!, cmd.slice(1), { cwd: options.cwd, env: options.env, stdio: ["ignore", options.stdout, options.stderr] });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.on("error", reject); // kept: a later error (a failed kill) then goes nowhere instead of throwing
  });
  return {
    pid: child.pid!,
    exited,
    get exitCode() {
      return child.exitCode;
    },
    get signalCode() {
      return child.signalCode;
    },
    kill: (signal) => void child.kill(signal),
    stdout: child.stdout,
    stderr: child.stderr,
  };
}

/** Resolves once ready; otherwise kills the process and rejects with why. */
async function waitReady(
  proc: SpawnedProcess,
  ready: Promise<void>,
  exited: Promise<ExitInfo>,
  timeoutMs: number,
  name: string,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const failure = await Promise.race([
    ready.then(() => undefined),
    exited.then((exit) => `exited before it was ready (${exit.reason})`),
    new Promise<string>((resolve) => (timer = setTimeout(resolve, timeoutMs, `not ready within ${timeoutMs} ms`))),
  ]);
  clearTimeout(timer);
  if (failure === undefined) return;
  proc.kill("SIGKILL");
  await exited;
  throw new HermesError(ErrorCode.UNAVAILABLE, `${name}: ${failure}`, { reason: failure });
}

/** This process's environment with `extra` applied (an undefined value removes a variable). */
export function environment(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string | undefined> = { ...process.env, ...extra };
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

function describeExit(code: number | null, signal: string | null): ExitInfo {
  if (signal !== null) return { code: null, signal, reason: `killed by ${signal}` };
  return { code, signal: null, reason: code === 0 ? "normal" : `exit code ${code}` };
}

/** Calls `onLine` with each newline-terminated line of `stream`, then with any unterminated tail. */
async function forEachLine(stream: AsyncIterable<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let partial = "";
  for await (const chunk of stream) {
    partial += decoder.decode(chunk, { stream: true });
    const lines = partial.split("\n");
    partial = lines.pop()!;
    for (const line of lines) safeCall(onLine, line);
  }
  partial += decoder.decode();
  if (partial !== "") safeCall(onLine, partial);
}

// A throwing line callback must not stop the draining: an undrained pipe would block the child.
function safeCall(onLine: (line: string) => void, line: string): void {
  try {
    onLine(line);
  } catch {
    // ignored on purpose, see above
  }
}
