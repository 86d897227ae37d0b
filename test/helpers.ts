/** Shared test helpers: temp dirs, child processes that are always cleaned up, waiting with deadlines. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DENO_INSTALL_HINT, findDeno } from "../src/supervisor/deno-runtime.ts";

export const BUN = process.execPath;

/** A private temp directory removed on dispose. */
export function tempDir(prefix = "hm-test-"): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

/** Polls `condition` until true or the deadline passes (then throws with `what`). */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    // The poll interval of this deadline wait, not a wait for time to pass: the loop ends as
    // soon as the condition holds.
    await Bun.sleep(5);
  }
}

/** A spawned process (Bun or Deno) whose stdout lines are collected; killed with SIGKILL on dispose. */
export interface Child extends AsyncDisposable {
  proc: Bun.Subprocess<"ignore", "pipe", "inherit">;
  lines: string[];
  /** Resolves with the first stdout line matching `pattern`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

/** Spawns `bun <script> ...args` and collects its stdout. */
export function spawnBun(script: string, args: string[], env: Record<string, string> = {}): Child {
  return spawnChild([BUN, script, ...args], env);
}

/**
 * The Deno binary the Deno tests run (src/supervisor/deno-runtime.ts findDeno: $HERMES_DENO,
 * the `deno` npm dependency, the PATH); throws saying how to install it when there is none.
 */
export function denoBinary(): string {
  const deno = findDeno();
  if (deno === undefined) throw new Error(`this test runs Deno, and no Deno binary was found. ${DENO_INSTALL_HINT}`);
  return deno;
}

/**
 * Spawns `deno run <permissions> <script> ...args` and collects its stdout, like
 * {@link spawnBun}. `--no-prompt`: a permission not granted fails at once, naming the flag.
 *
 * @example
 * await using child = spawnDeno(FIXTURE, [address], ["--allow-read", "--allow-net"]);
 */
export function spawnDeno(script: string, args: string[], permissions: string[], env: Record<string, string> = {}): Child {
  return spawnChild([denoBinary(), "run", "--no-prompt", "--quiet", ...permissions, script, ...args], env);
}

function spawnChild(command: string[], env: Record<string, string>): Child {
  const proc = Bun.spawn(command, {
    stdout: "pipe",
    stderr: "inherit",
    stdin: "ignore",
    env: { ...process.env, ...env },
  });
  const lines: string[] = [];
  (async () => {
    const decoder = new TextDecoder();
    let partial = "";
    for await (const chunk of proc.stdout) {
      partial += decoder.decode(chunk, { stream: true });
      const parts = partial.split("\n");
      partial = parts.pop()!;
      lines.push(...parts);
    }
  })();
  return {
    proc,
    lines,
    async waitForLine(pattern, timeoutMs = 10_000) {
      await waitFor(() => lines.some((l) => pattern.test(l)) || proc.exitCode !== null, `a line matching ${pattern}`, timeoutMs);
      const line = lines.find((l) => pattern.test(l));
      if (!line) throw new Error(`process exited (${proc.exitCode}) before printing ${pattern}`);
      return line;
    },
    async [Symbol.asyncDispose]() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

/** Resident set size of a process in KiB, from /proc. */
export function rssKiB(pid: number): number {
  const status = require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8") as string;
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

/** Simulated work inside a handler under test (not a wait for a condition: use waitFor for that). */
export function simulateWork(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
