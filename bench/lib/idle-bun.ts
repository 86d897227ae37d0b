/**
 * Bare Bun children, the floor of the actor scenarios: a process that prints one line and
 * idles (`bun -e "...; setInterval(() => {}, 1000)"`). Spawn to that line is what a restart or
 * a mesh start-up cannot go below; its RSS is what any Bun process costs. Each child inherits
 * this process's CPU affinity, like the supervisor's children, and is killed however the
 * harness ends.
 */
import { join } from "node:path";
import { onExit } from "./cleanup.ts";

/** What the child does before it prints its line: nothing, or load the libraries hermes uses. */
export const IDLE_PROGRAMS = {
  bare: "",
  libs: "await import('msgpackr'); await import('zod'); await import('hono');",
} as const;
export type IdleProgram = keyof typeof IDLE_PROGRAMS;

export interface IdleBun extends AsyncDisposable {
  readonly pid: number;
  /** Ms from just before Bun.spawn to the child's first stdout line. */
  readonly readyMs: number;
}

/** Where `import('zod')` resolves from: the repository root. */
const ROOT = join(import.meta.dir, "../..");

/**
 * Spawns an idle Bun child and resolves once it printed its line.
 *
 * @example
 * await using idle = await spawnIdleBun("bare");
 * console.log(idle.readyMs, processMemory(idle.pid).rss);
 */
export async function spawnIdleBun(program: IdleProgram = "bare", timeoutMs = 10_000, deno?: string): Promise<IdleBun> {
  const code = `${IDLE_PROGRAMS[program]} console.log("ready"); setInterval(() => {}, 1000);`;
  const t0 = performance.now();
  // `deno`: the same idle program on Deno (the deno scenario's baseline).
  const proc = Bun.spawn(deno ? [deno, "eval", code] : [process.execPath, "-e", code], { cwd: ROOT, stdin: "ignore", stdout: "pipe", stderr: "inherit" });
  const forget = onExit(() => proc.kill("SIGKILL"));
  const dispose = async () => {
    proc.kill("SIGKILL");
    await proc.exited;
    forget();
  };
  const reader = proc.stdout.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const first = await Promise.race([
      reader.read(),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`idle bun (${program}) printed nothing within ${timeoutMs} ms`)), timeoutMs))),
    ]);
    if (first.done) throw new Error(`idle bun (${program}) exited before printing (code ${await proc.exited})`);
    const readyMs = performance.now() - t0;
    reader.releaseLock();
    return { pid: proc.pid, readyMs, [Symbol.asyncDispose]: dispose };
  } catch (error) {
    await dispose();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
