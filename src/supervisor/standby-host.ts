/**
 * A standby actor host: a Bun process started ahead of need, with the actor host's code loaded,
 * that waits on its stdin for which actor to become. A start handed to it skips Bun's own
 * start-up and the host's load, most of a restart's time (docs/actors.md, "Restarts"). As a
 * tree starts, each Bun actor's start prepares the spare the next one takes; once the tree is
 * up, the mesh keeps one for the next restart (mesh-runtime.ts). Bun only (a Bun.spawn'd Bun
 * host): a supervisor on Deno keeps none.
 */
import type { Logger } from "../../mesh/logger.ts";
import { STANDBY_FLAG, type StandbyAssignment } from "../actor/actor-host.ts";
import type { SpawnedProcess } from "./process-child.ts";

/**
 * Variables that take effect when a process starts (Bun's and JavaScriptCore's settings, the
 * allocator, the dynamic linker, locale and time zone): a start that changes one of them is
 * spawned fresh, since a standby's start-up has happened already.
 */
const READ_AT_START = /^(BUN_|NODE_|JSC_|MALLOC|MIMALLOC_|LD_|UV_|TZ$|LANG$|LC_)/;

type Spare = Bun.Subprocess<"pipe", "pipe", "pipe">;

/** How long a spare told to go may take to exit by itself before it is killed. */
const STANDBY_EXIT_MS = 2000;

/**
 * At most one spare actor host, for `[bun, hostEntry]`, with the environment every actor of the
 * mesh shares.
 *
 * @example
 * const standby = new StandbyHost([process.execPath, hostEntry], meshEnv, log, { dir });
 * standby.prepare();
 * const proc = standby.take(cmd, { env }) ?? Bun.spawn(cmd, { env, ... });
 * standby.close();
 */
export class StandbyHost {
  #host: readonly [string, string];
  #env: Record<string, string>;
  #log: Logger;
  /** What follows STANDBY_FLAG on a spare's command line. */
  #args: readonly string[];
  #spare: Spare | undefined;
  #closed = false;

  /**
   * `preload`: modules a spare imports while it waits (any actor module's common imports);
   * `dir`: the mesh whose control socket a spare connects to while it waits.
   */
  constructor(host: readonly [string, string], env: Record<string, string>, log: Logger, options: { preload?: readonly string[]; dir?: string } = {}) {
    this.#host = host;
    this.#env = env;
    this.#log = log;
    this.#args = [...(options.dir !== undefined ? ["--dir", options.dir] : []), ...(options.preload ?? [])];
  }

  /** Starts a spare, unless there is one (or this is closed). */
  prepare(): void {
    if (this.#closed || this.#spare) return;
    const spare = Bun.spawn([...this.#host, STANDBY_FLAG, ...this.#args], { env: this.#env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    this.#spare = spare;
    void spare.exited.then((code) => {
      if (this.#spare !== spare) return; // taken: its exit is the actor's
      this.#spare = undefined;
      if (!this.#closed) this.#log.warn("standby actor host exited before it was used", { pid: spare.pid, code, signal: spare.signalCode });
    });
  }

  /**
   * The spare, told to run the host with `cmd`'s arguments and `env`, or undefined when it
   * cannot be (then spawn as usual): there is no live spare, `cmd` is not this host, a `cwd` is
   * asked for, or `env` changes a variable read at start-up. The spare is the caller's from now
   * on; `prepare()` makes the next one.
   */
  take(cmd: readonly string[], options: { env: Record<string, string>; cwd?: string }): SpawnedProcess | undefined {
    const spare = this.#spare;
    if (!spare || spare.exitCode !== null || spare.signalCode !== null || spare.killed) return undefined;
    if (options.cwd !== undefined || cmd[0] !== this.#host[0] || cmd[1] !== this.#host[1]) return undefined;
    const env = envChanges(this.#env, options.env);
    if (setsStartUpVariable(env)) return undefined;
    const assignment: StandbyAssignment = { argv: cmd.slice(2), env };
    try {
      spare.stdin.write(`${JSON.stringify(assignment)}\n`);
      spare.stdin.end();
    } catch {
      return undefined; // it went away meanwhile; its exit handler forgets it
    }
    this.#spare = undefined;
    return spare;
  }

  /**
   * Lets the spare go; no other is made. Its stdin ends, which tells it to exit: it cuts its
   * rehearsal short and removes the rehearsal's directory first (a spare killed mid-rehearsal
   * left it behind). One still there STANDBY_EXIT_MS later is killed, while this process runs;
   * if it exits sooner, its end of the pipe closes too, and the spare goes the same way.
   */
  close(): void {
    this.#closed = true;
    const spare = this.#spare;
    this.#spare = undefined;
    if (!spare) return;
    try {
      spare.stdin.end();
    } catch {
      // Its pipe is gone already: so is it, or it soon will be.
    }
    const kill = setTimeout(() => spare.kill("SIGKILL"), STANDBY_EXIT_MS);
    kill.unref?.();
    void spare.exited.then(() => clearTimeout(kill));
  }
}

/**
 * Whether `env` names a variable read when a process starts: an actor whose `env` does is
 * spawned fresh, never handed to a spare.
 *
 * @example
 * setsStartUpVariable({ TZ: "UTC" }); // true
 */
export function setsStartUpVariable(env: Readonly<Record<string, unknown>>): boolean {
  return Object.keys(env).some((name) => READ_AT_START.test(name));
}

/** What turns environment `from` into `to`: changed or added values, and `null` for the ones to remove. */
function envChanges(from: Record<string, string>, to: Record<string, string>): Record<string, string | null> {
  const changes: Record<string, string | null> = {};
  for (const [name, value] of Object.entries(to)) if (from[name] !== value) changes[name] = value;
  for (const name of Object.keys(from)) if (!(name in to)) changes[name] = null;
  return changes;
}
