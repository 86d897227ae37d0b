/**
 * Fixture processes: a Bun child pinned to its placement's cpu, speaking a line protocol on
 * stdin/stdout (see bench/fixtures/fixture-control.ts). Every child is registered so that it
 * is killed however the harness ends (lib/cleanup.ts), and disposing one asks it to exit,
 * then kills it if it has not within 3 s.
 */
import { onExit } from "./cleanup.ts";
import { pinPrefix, type Placement } from "./placement.ts";

/** A running fixture. */
export interface Fixture extends AsyncDisposable {
  readonly pid: number;
  /** The JSON after the fixture's "ready" line. */
  readonly info: Record<string, unknown>;
  /** Sends a command line and resolves with the rest of the reply line `<command> <rest>`. */
  ask(command: string, timeoutMs?: number): Promise<string>;
  /** Sends a message on the IPC channel (only for a fixture spawned with `ipc`). */
  send(message: unknown): void;
  /** Resolves with the exit code when the child has exited (for peers that must fail waits then). */
  readonly exited: Promise<number>;
}

/** How to spawn a fixture other than as a plain Bun script. */
export interface FixtureOptions {
  /** The executable running the script instead of this Bun (e.g. a `node` path); no Bun flags then. */
  runtime?: string;
  /** Opens Bun's IPC channel to the child (a Bun child): called with each message it sends. */
  ipc?: (message: unknown) => void;
  /** IPC serialization (default Bun's "advanced"). */
  serialization?: "json" | "advanced";
}

/**
 * Spawns `bun <script> ...args` on the placement's cpu and waits for its ready line.
 * Extra Bun flags for children (for example `--cpu-prof-md`) come from BENCH_CHILD_BUN_FLAGS.
 */
export async function spawnFixture(script: string, args: string[], placement: Placement, timeoutMs = 10_000, options: FixtureOptions = {}): Promise<Fixture> {
  const flags = options.runtime ? [] : (process.env.BENCH_CHILD_BUN_FLAGS ?? "").split(" ").filter(Boolean);
  const proc = Bun.spawn([...pinPrefix(placement), options.runtime ?? process.execPath, ...flags, script, ...args], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
    ...(options.ipc && { ipc: options.ipc, serialization: options.serialization ?? "advanced" }),
  });
  const forget = onExit(() => proc.kill("SIGKILL"));
  proc.exited.then(forget);
  const lines = new LineQueue(proc.stdout, proc.exited);
  const dispose = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      try {
        proc.stdin.write("exit\n");
        proc.stdin.end();
      } catch {
        // Already gone.
      }
      const timer = setTimeout(() => proc.kill("SIGKILL"), 3000);
      await proc.exited;
      clearTimeout(timer);
    }
  };
  try {
    const ready = await lines.next("ready", timeoutMs);
    return {
      pid: proc.pid,
      info: JSON.parse(ready || "{}"),
      exited: proc.exited,
      ask(command, askTimeoutMs = 10_000) {
        proc.stdin.write(`${command}\n`);
        proc.stdin.flush();
        return lines.next(command, askTimeoutMs);
      },
      send(message) {
        if (!options.ipc) throw new Error("fixture was spawned without an IPC channel");
        proc.send(message);
      },
      [Symbol.asyncDispose]: dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/** Lines of a child's stdout, consumed in order, each awaited with a deadline. */
class LineQueue {
  #lines: string[] = [];
  #wake: (() => void) | undefined;
  #ended = false;

  constructor(stream: ReadableStream<Uint8Array>, exited: Promise<number>) {
    this.#read(stream);
    exited.then(() => {
      this.#ended = true;
      this.#wake?.();
    });
  }

  async #read(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let partial = "";
    for await (const chunk of stream) {
      partial += decoder.decode(chunk, { stream: true });
      const parts = partial.split("\n");
      partial = parts.pop()!;
      this.#lines.push(...parts);
      this.#wake?.();
    }
  }

  /** The rest of the next line starting with `word`; earlier lines are echoed to stderr. */
  async next(word: string, timeoutMs: number): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.#lines.length > 0) {
        const line = this.#lines.shift()!;
        if (line === word || line.startsWith(`${word} `)) return line.slice(word.length + 1);
        if (line.trim()) console.error(`[fixture] ${line}`);
      }
      if (this.#ended) throw new Error(`fixture exited before answering '${word}'`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`fixture did not answer '${word}' within ${timeoutMs} ms`);
      const { promise, resolve } = Promise.withResolvers<void>();
      this.#wake = resolve;
      const timer = setTimeout(resolve, left);
      await promise;
      clearTimeout(timer);
      this.#wake = undefined;
    }
  }
}
