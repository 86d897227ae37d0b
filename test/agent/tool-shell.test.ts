/** shell: absent unless enabled; when enabled, programs run without a shell, in the sandbox, under a deadline, with output capped. */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ToolRegistry, type ToolContext, type ToolResult } from "../../src/agent/tool-registry.ts";
import { builtinTools, shellTool } from "../../src/agent/tools/builtin-tools.ts";
import { ErrorCode } from "../../src/protocol/error-codes.ts";
import { tempDir, waitFor } from "../helpers.ts";

const box = tempDir("hm-tool-shell-");
afterAll(() => box[Symbol.dispose]());
const ctx: ToolContext = { trace_id: "t", signal: new AbortController().signal };
const registry = new ToolRegistry([shellTool({ sandboxDir: box.path, timeoutMs: 300, maxOutputBytes: 1000 })]);

function value(result: ToolResult): Record<string, unknown> {
  if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.error)}`);
  return result.value as Record<string, unknown>;
}
function error(result: ToolResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
  return result.error;
}

/** Whether `pid` still runs; a zombie waiting for its new parent to reap it counts as gone. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return existsSync("/proc") ? false : true; // no /proc (macOS): kill(0) is all we have
  }
}

describe("only when enabled", () => {
  test("builtinTools leaves the shell out by default, and when not explicitly true", () => {
    const names = (options: object) => new ToolRegistry(builtinTools(options)).names();
    expect(names({})).toEqual(["calculator", "http_fetch", "file_read", "file_write"]);
    expect(names({ enableShell: false })).not.toContain("shell");
    expect(names({ enableShell: "yes" })).not.toContain("shell");
    expect(names({ enableShell: true, sandboxDir: box.path })).toEqual(["calculator", "http_fetch", "file_read", "file_write", "shell"]);
  });

  test("a call to the shell when it is not enabled is code 4", async () => {
    const tools = new ToolRegistry(builtinTools({ sandboxDir: box.path }));
    expect(error(await tools.call("shell", { command: "ls" }, ctx))).toMatchObject({ error_code: ErrorCode.TOOL_NOT_FOUND, requested_tool: "shell" });
  });
});

describe("running programs", () => {
  test("runs in the sandbox and returns exit code and output", async () => {
    writeFileSync(join(box.path, "marker.txt"), "");
    const got = value(await registry.call("shell", { command: "ls" }, ctx));
    expect(got).toMatchObject({ exit_code: 0, signal: null, truncated: false });
    expect(String(got.stdout).split("\n")).toContain("marker.txt");
  });

  test("shell metacharacters are plain characters: nothing is expanded, chained or redirected", async () => {
    const args = ["a; touch injected", "$(touch injected2)", "`id`", "*", "|", "&&", ">out.txt", "$HOME"];
    const got = value(await registry.call("shell", { command: "echo", args }, ctx));
    expect(got.stdout).toBe(`${args.join(" ")}\n`);
    expect(readdirSync(box.path).filter((f) => f !== "marker.txt")).toEqual([]);
  });

  test("a command line in `command` is not split: it names no program, code 2", async () => {
    expect(error(await registry.call("shell", { command: "echo hi; touch injected" }, ctx))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, expected: "the name of a program on PATH" });
    expect(existsSync(join(box.path, "injected"))).toBe(false);
  });

  test("a non-zero exit is a result with stderr", async () => {
    const got = value(await registry.call("shell", { command: "ls", args: ["no-such-file"] }, ctx));
    expect(got.exit_code).not.toBe(0);
    expect(String(got.stderr)).toContain("no-such-file");
  });

  test("a single argument is wrapped into the list", async () => {
    const result = await registry.call("shell", { command: "echo", args: "solo" }, ctx);
    expect(value(result).stdout).toBe("solo\n");
    expect(result.normalized).toEqual(['args: "solo" → ["solo"] (single value wrapped in an array)']);
  });

  test("output is capped and marked truncated; the process still runs to its end", async () => {
    const got = value(await registry.call("shell", { command: "head", args: ["-c", "200000", "/dev/zero"] }, ctx));
    expect(got).toMatchObject({ exit_code: 0, truncated: true });
    expect(String(got.stdout)).toHaveLength(1000);
  });

  test("a program past the deadline is killed: code 3", async () => {
    const result = error(await registry.call("shell", { command: "sleep", args: ["30"] }, ctx));
    expect(result).toMatchObject({ error_code: ErrorCode.TASK_TIMEOUT, timeout_ms: 300 });
  });

  test.skipIf(!Bun.which("setsid"))("a process that escapes the group cannot hold the call past the deadline", async () => {
    // The escapee writes its pid once it has left the group; the script waits for that before it exits.
    const script = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 30' & while [ ! -s escaped.pid ]; do :; done; echo started";
    const result = await registry.call("shell", { command: "sh", args: ["-c", script] }, ctx);
    process.kill(Number(readFileSync(join(box.path, "escaped.pid"), "utf8")), "SIGKILL");
    // It exited in time, so this is its result; the held pipe was cut at the deadline.
    expect(value(result)).toMatchObject({ exit_code: 0, stdout: "started\n", truncated: true });
  });

  test("what a program leaves running is killed with it and does not hold the call", async () => {
    // The background sleep keeps stdout open: were it left alive, the call would end in code 3.
    const got = value(await registry.call("shell", { command: "sh", args: ["-c", "sleep 30 & echo $! > sleeper.pid; echo started"] }, ctx));
    expect(got).toMatchObject({ exit_code: 0, stdout: "started\n", truncated: false });
    const pid = Number(readFileSync(join(box.path, "sleeper.pid"), "utf8"));
    await waitFor(() => !alive(pid), "the background sleep to be gone");
  });
});
