/**
 * `shell`: runs one program with arguments in the sandbox directory. Despite the name there is
 * no shell: the arguments go to the program as they are, so `;`, `|`, `$(...)` and globs are
 * plain characters. Only registered when a host enables it (builtinTools({ enableShell: true })).
 *
 * The program runs inside bubblewrap: its own user, pid, network, IPC, UTS and cgroup
 * namespaces, the host's file system read-only with private places hidden, and only the
 * sandbox directory writable. Where bubblewrap is missing or cannot create namespaces the tool
 * refuses (code 7), unless the host set `allowUnsandboxed`. docs/agents.md lists exactly what
 * is and is not isolated.
 */
import { closeSync, existsSync, lstatSync, readFileSync } from "node:fs";
import { z } from "zod";
import { ErrorCode, HermesError } from "../../../mesh/errors.ts";
import { defineTool } from "../tool-definition.ts";
import { readCapped } from "./read-capped.ts";
import { sandboxRoot } from "./sandbox-path.ts";

/** Options of `shell`. */
export interface ShellToolOptions {
  /** Working directory when the call's context names no sandbox. */
  sandboxDir?: string;
  /** Deadline of one run in milliseconds (default 10 s); the process is killed past it. */
  timeoutMs?: number;
  /** Bytes kept of stdout and of stderr each (default 64 KiB). */
  maxOutputBytes?: number;
  /** Environment of the process (default: PATH only, and HOME set to the sandbox). */
  env?: Record<string, string>;
  /** The bubblewrap executable (default /usr/bin/bwrap). */
  bwrapPath?: string;
  /**
   * Run programs with no sandbox when bubblewrap is missing or cannot run here (default false:
   * the call is refused with code 7). Unsandboxed, a program can read, write and connect
   * wherever the host's user can; only its process group is killed at the deadline.
   */
  allowUnsandboxed?: boolean;
  /**
   * Host paths replaced by an empty directory (a file: by an unreadable one) inside the sandbox; missing
   * ones are skipped (default `HIDDEN_PATHS`). The sandbox directory stays visible even when it
   * lies under one of them.
   */
  hiddenPaths?: readonly string[];
}

/**
 * What the sandbox hides by default: home directories, temporary and runtime directories
 * (where sockets such as Docker's and D-Bus's live), mount points, SSH host keys and password
 * hashes. Everything else of the host is visible read-only.
 *
 * @example
 * shellTool({ sandboxDir: "/srv/mesh/sandbox", hiddenPaths: [...HIDDEN_PATHS, "/srv/mesh"] });
 */
export const HIDDEN_PATHS: readonly string[] = [
  "/home", "/root", "/tmp", "/var/tmp", "/run", "/var/run", "/mnt", "/media", "/srv",
  "/etc/ssh", "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
];

/** The user and group a program runs as inside its user namespace: "nobody", not root. */
const SANDBOX_ID = "65534";

/**
 * `shell`: `{ command, args? }` → `{ exit_code, signal, stdout, stderr, truncated, sandboxed }`.
 * The program is looked up on PATH and started without a shell, in the sandbox, with stdin
 * closed. A non-zero exit is a result; an unknown program is code 2; a run past the deadline
 * is killed with every process it started and is code 3; what it left running after exiting
 * is killed too. No usable bubblewrap and no `allowUnsandboxed`: code 7 naming why.
 *
 * @example
 * const registry = new ToolRegistry([shellTool({ sandboxDir: "/tmp/box", timeoutMs: 5000 })]);
 * await registry.call("shell", { command: "ls", args: ["-l"] }, ctx); // { ok: true, value: { exit_code: 0, sandboxed: true, ... } }
 */
export function shellTool(options: ShellToolOptions = {}) {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
  const bwrap = new Bubblewrap(options.bwrapPath ?? "/usr/bin/bwrap", options.hiddenPaths ?? HIDDEN_PATHS);
  return defineTool({
    name: "shell",
    description: "Runs a program with arguments in the sandbox directory, without a shell (no pipes, redirections or globs), and returns its exit code and output.",
    schema: z.object({
      command: z.string().min(1).describe("the program, e.g. ls or python3"),
      args: z.array(z.string()).default([]).describe("its arguments, one per element"),
    }),
    async run({ command, args }, ctx) {
      const cwd = await sandboxRoot(ctx, options.sandboxDir, "shell");
      const env = options.env ?? { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd };
      const unavailable = await bwrap.unavailable(cwd);
      if (unavailable && options.allowUnsandboxed !== true) {
        throw new HermesError(ErrorCode.INTERNAL, `shell refused: no sandbox is available (${unavailable})`, {
          reason: unavailable,
          expected: `bubblewrap at ${bwrap.path} able to create namespaces, or the shell option allowUnsandboxed: true`,
        });
      }
      const sandboxed = unavailable === undefined;
      const argv = sandboxed ? [...bwrap.prefix(cwd), command, ...args] : [command, ...args];
      let run: Run;
      try {
        run = new Run(argv, cwd, env, sandboxed);
      } catch (error) {
        throw notAProgram(command, error instanceof Error ? error.message : String(error), error);
      }
      let timedOut = false;
      const stopReading = new AbortController();
      // At the deadline: kill everything, and, unsandboxed, stop reading pipes that something
      // outside the group may hold. Sandboxed, nothing outlives the namespace, so EOF comes.
      const timer = setTimeout(() => {
        timedOut = run.running;
        run.kill();
        if (!sandboxed) stopReading.abort();
      }, timeoutMs);
      const onAbort = () => run.kill();
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      if (ctx.signal.aborted) run.kill();
      try {
        const read = (stream: ReadableStream<Uint8Array>) => readCapped(stream, maxOutputBytes, { drain: true, signal: stopReading.signal });
        const output = Promise.all([read(run.child.stdout), read(run.child.stderr)]);
        await run.exited();
        const [stdout, stderr] = await output;
        if (timedOut) {
          throw new HermesError(ErrorCode.TASK_TIMEOUT, `${command} did not finish within ${timeoutMs} ms and was killed`, {
            timeout_ms: timeoutMs,
            stdout: stdout.text,
            stderr: stderr.text,
          });
        }
        // bubblewrap itself reports a program it could not start, on stderr, with status 1.
        const failed = sandboxed && run.exitCode === 1 ? /^bwrap: execvp [^\n]*: ([^\n]*)\n?$/.exec(stderr.text) : null;
        if (failed) throw notAProgram(command, `${JSON.stringify(command)} cannot be started in the sandbox: ${failed[1]}`);
        return { exit_code: run.exitCode, signal: run.child.signalCode, stdout: stdout.text, stderr: stderr.text, truncated: stdout.truncated || stderr.truncated, sandboxed };
      } finally {
        clearTimeout(timer);
        ctx.signal.removeEventListener("abort", onAbort);
      }
    },
  });
}

function notAProgram(command: string, reason: string, cause?: unknown): HermesError {
  return new HermesError(ErrorCode.INVALID_REQUEST, `cannot run ${JSON.stringify(command)}`, { reason, expected: "the name of a program on PATH" }, { cause });
}

/** bubblewrap at `path`: whether it works here, and the command line that puts a program inside. */
class Bubblewrap {
  readonly path: string;
  #hidden: readonly string[];
  #works = false;
  /** bubblewrap before 0.8 has no --disable-userns: found out by the probe, then left out. */
  #disableUserns = true;

  constructor(path: string, hidden: readonly string[]) {
    this.path = path;
    this.#hidden = hidden;
  }

  /**
   * Why programs cannot be sandboxed here, or undefined when they can. Found by running `true`
   * in exactly the sandbox a call gets; a success is remembered, a failure is tried again.
   */
  async unavailable(root: string): Promise<string | undefined> {
    if (this.#works) return undefined;
    if (!existsSync(this.path)) return `${this.path} does not exist (bubblewrap is not installed; on Debian: apt-get install bubblewrap)`;
    let stderr = await this.#probe(root);
    if (stderr !== undefined && stderr.includes("--disable-userns")) {
      this.#disableUserns = false;
      stderr = await this.#probe(root);
    }
    if (stderr === undefined) this.#works = true;
    else this.#disableUserns = true;
    return stderr === undefined ? undefined : `${this.path} cannot set up a sandbox here: ${stderr.trim() || "it failed without a message"}`;
  }

  async #probe(root: string): Promise<string | undefined> {
    try {
      const probe = Bun.spawn([...this.prefix(root, false), Bun.which("true") ?? "/bin/true"], { cwd: root, env: {}, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
      const [stderr, code] = await Promise.all([new Response(probe.stderr).text(), probe.exited]);
      return code === 0 ? undefined : stderr;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  /**
   * bwrap's arguments, up to the program: the namespaces, the mounts (in order: the root
   * read-only, fresh /dev and /proc, the hidden paths, then the sandbox writable on top), and
   * `--info-fd 3`, where bwrap writes the host pid of the namespace's init.
   */
  prefix(root: string, infoFd = true): string[] {
    const args = [this.path, "--unshare-all", "--unshare-user", "--uid", SANDBOX_ID, "--gid", SANDBOX_ID];
    if (this.#disableUserns) args.push("--disable-userns");
    args.push("--hostname", "hermes-sandbox", "--cap-drop", "ALL", "--new-session", "--die-with-parent");
    args.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc");
    for (const path of this.#hidden) {
      const kind = kindOf(path);
      if (kind === "directory") args.push("--tmpfs", path);
      else if (kind === "file") args.push("--ro-bind", "/dev/null", path);
    }
    args.push("--bind", root, root, "--chdir", root);
    if (infoFd) args.push("--info-fd", "3");
    return [...args, "--"];
  }
}

function kindOf(path: string): "directory" | "file" | undefined {
  try {
    const info = lstatSync(path);
    return info.isDirectory() ? "directory" : info.isFile() ? "file" : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One started process and how to end it with everything it started. Detached: the child leads
 * a new process group. Sandboxed, the child is bwrap, and killing the pid namespace's init
 * (whose pid bwrap writes on fd 3) kills every process in the namespace; bwrap exits only
 * after that init is reaped, and the init only after all of the namespace is gone, so once
 * `exited()` resolves nothing of the call runs any more. Unsandboxed, the group is killed.
 */
class Run {
  readonly child: Bun.Subprocess<"ignore", "pipe", "pipe">;
  #sandboxed: boolean;
  #init: number | undefined;
  #exited = false;

  constructor(argv: string[], cwd: string, env: Record<string, string>, sandboxed: boolean) {
    this.#sandboxed = sandboxed;
    if (!sandboxed) {
      this.child = Bun.spawn(argv, { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe", detached: true });
      return;
    }
    const child = Bun.spawn(argv, { cwd, env, stdio: ["ignore", "pipe", "pipe", "pipe"], detached: true });
    this.child = child as unknown as Bun.Subprocess<"ignore", "pipe", "pipe">;
    void this.#readInit(child.stdio[3] as number);
  }

  get exitCode(): number | null {
    return this.child.exitCode;
  }

  get running(): boolean {
    return !this.#exited;
  }

  /** Resolves when the child has exited, after killing what it left behind (unsandboxed). */
  async exited(): Promise<void> {
    await this.child.exited;
    this.#exited = true;
    // Whatever it left running in its group would hold the pipes open (and outlive the call).
    if (!this.#sandboxed) killGroup(this.child.pid);
  }

  kill(): void {
    if (this.#exited) return;
    const init = this.#init;
    // The init's pid is bwrap's child until bwrap reaps it, so it cannot name another process.
    if (init !== undefined && parentOf(init) === this.child.pid) {
      try {
        process.kill(init, "SIGKILL");
        return;
      } catch {
        // gone already: bwrap is about to exit
      }
    }
    // Unsandboxed, or bwrap has not told the pid yet: the group, bwrap and its init included
    // (the init dying takes the namespace with it).
    killGroup(this.child.pid);
  }

  /** bwrap's info (`{"child-pid": N, ...}`) on fd 3; bwrap closes its end after writing it. */
  async #readInit(fd: number): Promise<void> {
    const decoder = new TextDecoder();
    let text = "";
    try {
      for await (const chunk of Bun.file(fd).stream()) text += decoder.decode(chunk, { stream: true });
    } catch {
      // no info: kill() falls back to the group
    } finally {
      closeSync(fd);
    }
    const pid = Number(/"child-pid":\s*(\d+)/.exec(text)?.[1]);
    if (pid > 0) this.#init = pid;
  }
}

function parentOf(pid: number): number | undefined {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // the group is gone already
  }
}
