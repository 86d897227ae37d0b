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

/**
 * True as soon as `condition` holds, false once `ms` have passed without it: for asserting that
 * something does not happen within a bound the code under test promises (a held ack, say).
 */
export async function holdsWithin(condition: () => boolean, ms: number): Promise<boolean> {
  try {
    await waitFor(condition, "the condition", ms);
    return true;
  } catch {
    return false;
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

/** A request body without a Content-Length: `text` as a stream of 64 KiB chunks, so fetch sends it chunked. */
export function chunkedBody(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 64 * 1024) controller.enqueue(bytes.subarray(at, at + 64 * 1024));
      controller.close();
    },
  });
}

/**
 * A deterministic xorshift generator of numbers in [0, 1), so a failing random test replays.
 *
 * @example
 * const next = seededRandom(0x2545f491);
 * const pick = pool[Math.floor(next() * pool.length)];
 */
export function seededRandom(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** Simulated work inside a handler under test (not a wait for a condition: use waitFor for that). */
export function simulateWork(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A process of a test whose whole output (stdout then stderr) is kept for its assertions; killed on dispose. */
export interface OutputProcess extends AsyncDisposable {
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** Everything it printed, once it has exited. */
  output: Promise<string>;
}

/**
 * Spawns `command` with `env` (the whole environment), keeping its output.
 *
 * @example
 * await using actor = spawnWithOutput([BUN, CLI, "actor", module, "--dir", dir], { ...process.env, HERMES_MESH_TOKEN: token });
 * expect(await actor.proc.exited).toBe(1);
 * expect(await actor.output).toContain("error 5");
 */
export function spawnWithOutput(command: string[], env: Record<string, string | undefined>): OutputProcess {
  const proc = Bun.spawn(command, { env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const output = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]).then(([out, err]) => out + err);
  return {
    proc,
    output,
    async [Symbol.asyncDispose]() {
      proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

/** Temporary Unix users in a temporary group, for permission tests (needs root). */
export interface TestGroup {
  readonly name: string;
  readonly gid: number;
  /** Creates a user (with nogroup as its primary group), in this group or not; removed with the group. */
  addUser(name: string, inGroup: boolean): { name: string; uid: number };
  /** Deletes the users and the group, ignoring what is already gone. */
  remove(): void;
}

function runOrThrow(command: string[]): string {
  const result = Bun.spawnSync(command, { stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`${command.join(" ")} failed: ${result.stderr.toString()}`);
  return result.stdout.toString().trim();
}

/**
 * Creates the group `name` (groupadd) for a test; users come with `addUser`.
 *
 * @example
 * const group = createTestGroup("hmsg1234");
 * const member = group.addUser("hmsgm1234", true);
 * try { ... } finally { group.remove(); }
 */
export function createTestGroup(name: string): TestGroup {
  runOrThrow(["groupadd", name]);
  const gid = Number(runOrThrow(["getent", "group", name]).split(":")[2]);
  const users: string[] = [];
  return {
    name,
    gid,
    addUser(user, inGroup) {
      runOrThrow(["useradd", "-M", "-N", "-g", "nogroup", ...(inGroup ? ["-G", name] : []), "-s", "/usr/sbin/nologin", user]);
      users.push(user);
      return { name: user, uid: Number(runOrThrow(["id", "-u", user])) };
    },
    remove() {
      for (const command of [...users.map((u) => ["userdel", u]), ["groupdel", name]]) Bun.spawnSync(command, { stdout: "ignore", stderr: "ignore" });
    },
  };
}

/** Whether process `pid` exists (signal 0). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs the transport conformance suite (test/mesh/transport.test.ts) in a `bun test` process of
 * its own with `env` added, so that a choice made by environment (the socket runtime, the
 * receivers' runtime) reaches the senders and every receiver it spawns; returns its report.
 */
export function runTransportSuite(env: Record<string, string>): { report: string; exitCode: number | null } {
  const run = Bun.spawnSync([process.execPath, "test", "--timeout", "30000", join(import.meta.dir, "mesh/transport.test.ts")], {
    cwd: join(import.meta.dir, ".."),
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
    timeout: 120_000,
  });
  return { report: run.stderr.toString(), exitCode: run.exitCode };
}

/** setTimeout's longest delay: Bun fires a longer one at once (after 1 ms, with a warning). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Runs `body` with setTimeout recording the delay of every timer set meanwhile (in this process),
 * then restores it: how a test sees that no timer was given a delay past MAX_TIMER_MS, which
 * would fire at once instead of when asked.
 *
 * @example
 * const { delays } = await recordTimerDelays(async () => pending.wait(request, { timeoutMs: 2 ** 32 }));
 * expect(Math.max(...delays)).toBeLessThanOrEqual(MAX_TIMER_MS);
 */
export async function recordTimerDelays<T>(body: () => Promise<T>): Promise<{ result: T; delays: number[] }> {
  const realSetTimeout = globalThis.setTimeout;
  const delays: number[] = [];
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    delays.push(args[1] ?? 0);
    return realSetTimeout(...args);
  }) as typeof setTimeout;
  try {
    return { result: await body(), delays };
  } finally {
    globalThis.setTimeout = realSetTimeout;
  }
}
