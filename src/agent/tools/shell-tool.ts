/**
 * `shell`: runs one program with arguments in the sandbox directory. Despite the name there is
 * no shell: the arguments go to the program as they are, so `;`, `|`, `$(...)` and globs are
 * plain characters. Only registered when a host enables it (builtinTools({ enableShell: true })).
 */
import { z } from "zod";
import { ErrorCode } from "../../protocol/error-codes.ts";
import { HermesError } from "../../protocol/hermes-error.ts";
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
}

/**
 * `shell`: `{ command, args? }` → `{ exit_code, signal, stdout, stderr, truncated }`. The program
 * is looked up on PATH and started with Bun.spawn (no shell), in the sandbox, with stdin
 * closed. A non-zero exit is a result; an unknown program is code 2; a run past the deadline
 * is killed with everything it started and is code 3; what it left running after exiting is
 * killed too.
 *
 * @example
 * const registry = new ToolRegistry([shellTool({ sandboxDir: "/tmp/box", timeoutMs: 5000 })]);
 * await registry.call("shell", { command: "ls", args: ["-l"] }, ctx);
 */
export function shellTool(options: ShellToolOptions = {}) {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
  return defineTool({
    name: "shell",
    description: "Runs a program with arguments in the sandbox directory, without a shell (no pipes, redirections or globs), and returns its exit code and output.",
    schema: z.object({
      command: z.string().min(1).describe("the program, e.g. ls or python3"),
      args: z.array(z.string()).default([]).describe("its arguments, one per element"),
    }),
    async run({ command, args }, ctx) {
      const cwd = await sandboxRoot(ctx, options.sandboxDir, "shell");
      let child: ReturnType<typeof spawn>;
      try {
        child = spawn([command, ...args], cwd, options.env ?? { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd });
      } catch (error) {
        throw new HermesError(ErrorCode.INVALID_REQUEST, `cannot run ${JSON.stringify(command)}`, {
          reason: error instanceof Error ? error.message : String(error),
          expected: "the name of a program on PATH",
        }, { cause: error });
      }
      let exited = false;
      let timedOut = false;
      const stopReading = new AbortController();
      const kill = () => killGroup(child.pid);
      // At the deadline: kill the group, and stop reading pipes that something outside it may hold.
      const timer = setTimeout(() => {
        timedOut = !exited;
        kill();
        stopReading.abort();
      }, timeoutMs);
      ctx.signal.addEventListener("abort", kill, { once: true });
      try {
        const read = (stream: ReadableStream<Uint8Array>) => readCapped(stream, maxOutputBytes, { drain: true, signal: stopReading.signal });
        const output = Promise.all([read(child.stdout), read(child.stderr)]);
        await child.exited;
        exited = true;
        // Whatever it left running in its group would hold the pipes open (and outlive the call).
        kill();
        const [stdout, stderr] = await output;
        if (timedOut) {
          throw new HermesError(ErrorCode.TASK_TIMEOUT, `${command} did not finish within ${timeoutMs} ms and was killed`, {
            timeout_ms: timeoutMs,
            stdout: stdout.text,
            stderr: stderr.text,
          });
        }
        return { exit_code: child.exitCode, signal: child.signalCode, stdout: stdout.text, stderr: stderr.text, truncated: stdout.truncated || stderr.truncated };
      } finally {
        clearTimeout(timer);
        ctx.signal.removeEventListener("abort", kill);
      }
    },
  });
}

/** Detached: the child leads a new process group, so the group can be killed as one. */
function spawn(argv: string[], cwd: string, env: Record<string, string>) {
  return Bun.spawn(argv, { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe", detached: true });
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // the group is gone already
  }
}
