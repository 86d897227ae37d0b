import { describe, expect, test } from "bun:test";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { ChildHandle } from "../../src/supervisor/child-spec.ts";
import { processChild } from "../../src/supervisor/process-child.ts";
import { BUN, tempDir } from "../helpers.ts";
import { alive, FIXTURE } from "./supervisor-harness.ts";

/** Starts `start` and makes sure the process is gone at the end, even when the test fails. */
async function withChild(start: () => Promise<ChildHandle>, body: (handle: ChildHandle) => Promise<void>): Promise<void> {
  const handle = await start();
  try {
    await body(handle);
  } finally {
    handle.kill();
    await handle.exited;
  }
}

describe("processChild", () => {
  test("passes env and cwd, delivers stdout and stderr lines (an unterminated tail too) before the exit", async () => {
    using dir = tempDir();
    const out: string[] = [];
    const err: string[] = [];
    const script = "console.log(process.env.HM_X); console.log(process.cwd()); console.error('oops'); process.stdout.write('tail'); process.exit(3)";
    const start = processChild([BUN, "-e", script], {
      env: { HM_X: "forty-two" },
      cwd: dir.path,
      onStdout: (line) => out.push(line),
      onStderr: (line) => err.push(line),
    });
    await withChild(start, async (handle) => {
      expect(handle.pid).toBeGreaterThan(0);
      expect(await handle.exited).toEqual({ code: 3, signal: null, reason: "exit code 3" });
      expect(out).toEqual(["forty-two", dir.path, "tail"]);
      expect(err).toEqual(["oops"]);
    });
  });

  test("stop() sends SIGTERM and kill() SIGKILL", async () => {
    const start = processChild([BUN, "-e", "console.log('up'); setInterval(() => {}, 1 << 30)"], { ready: (l) => l === "up" });
    await withChild(start, async (handle) => {
      handle.stop();
      expect(await handle.exited).toEqual({ code: null, signal: "SIGTERM", reason: "killed by SIGTERM" });
    });
    await withChild(start, async (handle) => {
      handle.kill();
      expect(await handle.exited).toMatchObject({ code: null, signal: "SIGKILL" });
      expect(alive(handle.pid!)).toBe(false);
    });
  });

  test("ready: start() resolves only after the ready line, which still reaches onStdout", async () => {
    using dir = tempDir();
    const lines: string[] = [];
    const start = processChild([BUN, FIXTURE, "r", `${dir.path}/log`], {
      ready: (line) => line.startsWith("up "),
      onStdout: (line) => lines.push(line),
    });
    await withChild(start, async (handle) => {
      expect(lines).toEqual([`up ${handle.pid}`]);
    });
  });

  test("start() rejects when the process exits before it is ready, or is not ready in time (and kills it)", async () => {
    const early = processChild([BUN, "-e", "process.exit(4)"], { ready: () => true });
    const error = await early().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HermesError);
    expect(error).toMatchObject({ code: ErrorCode.UNAVAILABLE, message: expect.stringContaining("exited before it was ready (exit code 4)") });
    // `name` replaces the command line in the message (a wrapper's argv says little).
    const named = await processChild([BUN, "-e", "process.exit(4)"], { ready: () => true, name: "actor early" })().catch((e: unknown) => e);
    expect((named as Error).message).toBe("actor early: exited before it was ready (exit code 4)");

    let pid = 0;
    const slow = processChild([BUN, "-e", "console.log(process.pid); setInterval(() => {}, 1 << 30)"], {
      ready: (line) => ((pid = Number(line)), false),
      readyTimeoutMs: 200,
    });
    await expect(slow()).rejects.toMatchObject({ message: expect.stringContaining("not ready within 200 ms") });
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid)).toBe(false);
  });

  test("a command that cannot be spawned makes start() reject", async () => {
    await expect(processChild(["/nonexistent/hermes-child"])()).rejects.toThrow();
  });
});
