/**
 * shell: absent unless enabled; when enabled, programs run without a shell, in the sandbox,
 * under a deadline, with output capped; inside bubblewrap they cannot write outside the
 * sandbox, reach the network or outlive the call, and without bubblewrap the tool refuses
 * unless the host allows an unsandboxed shell.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ToolRegistry, type ToolContext, type ToolResult } from "../../src/agent/tool-registry.ts";
import { builtinTools, shellTool } from "../../src/agent/tools/builtin-tools.ts";
import { ErrorCode } from "../../mesh/errors.ts";
import { tempDir, waitFor } from "../helpers.ts";

const temp = tempDir("hm-tool-shell-");
afterAll(() => temp[Symbol.dispose]());
const box = { path: join(temp.path, "box") };
const outside = join(temp.path, "outside");
mkdirSync(box.path);
mkdirSync(outside);
writeFileSync(join(outside, "secret.txt"), "secret");
const ctx: ToolContext = { trace_id: "t", signal: new AbortController().signal };

/** Whether bubblewrap can set up namespaces on this machine; if not, why (the sandbox tests are then skipped). */
const bwrapProblem = ((): string | undefined => {
  try {
    const probe = Bun.spawnSync(["/usr/bin/bwrap", "--unshare-all", "--unshare-user", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent", "--", "true"]);
    return probe.exitCode === 0 ? undefined : `bwrap fails here: ${probe.stderr.toString().trim()}`;
  } catch (error) {
    return `no /usr/bin/bwrap: ${String(error)}`;
  }
})();
const sandboxed = bwrapProblem === undefined;
if (!sandboxed) console.warn(`bubblewrap cannot run on this machine (${bwrapProblem}): the escape tests are skipped, the refusal is tested instead`);

// Sandboxed where the machine allows it, so the general tests run either way.
const registry = new ToolRegistry([shellTool({ sandboxDir: box.path, timeoutMs: 300, maxOutputBytes: 1000, allowUnsandboxed: !sandboxed })]);
// No bubblewrap at this path: with allowUnsandboxed, programs run as plain child processes.
const unsandboxed = new ToolRegistry([shellTool({ sandboxDir: box.path, timeoutMs: 300, bwrapPath: join(temp.path, "no-bwrap"), allowUnsandboxed: true })]);

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

/** Host pids of live processes whose command line contains `marker` (a zombie has none). */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(marker)) found.push(Number(entry));
    } catch {
      // it ended while we looked
    }
  }
  return found;
}

/** A `sleep` duration no other process on the machine has in its command line. */
function markedSleep(): string {
  return `1000.${crypto.getRandomValues(new Uint32Array(1))[0]!.toString().padStart(10, "0")}`;
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
    expect(got).toMatchObject({ exit_code: 0, signal: null, truncated: false, sandboxed });
    expect(String(got.stdout).split("\n")).toContain("marker.txt");
  });

  test("shell metacharacters are plain characters: nothing is expanded, chained or redirected", async () => {
    const before = readdirSync(box.path).sort();
    const args = ["a; touch injected", "$(touch injected2)", "`id`", "*", "|", "&&", ">out.txt", "$HOME"];
    const got = value(await registry.call("shell", { command: "echo", args }, ctx));
    expect(got.stdout).toBe(`${args.join(" ")}\n`);
    expect(readdirSync(box.path).sort()).toEqual(before);
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
});

describe.skipIf(!sandboxed)("inside bubblewrap", () => {
  const run = async (script: string) => value(await registry.call("shell", { command: "sh", args: ["-c", script] }, ctx));

  test("the program runs as nobody (uid 65534) in its own user namespace, not as the host's user", async () => {
    expect(await run("id -u; id -g")).toMatchObject({ exit_code: 0, stdout: "65534\n65534\n", sandboxed: true });
  });

  test("the host's files are readable but not writable; the sandbox directory is writable", async () => {
    if (existsSync("/etc/hostname")) expect((await run("cat /etc/hostname")).stdout).toBe(readFileSync("/etc/hostname", "utf8"));
    const pwned = `/etc/hm-shell-pwned-${markedSleep()}`;
    const denied = await run(`echo pwned > ${pwned}`);
    expect(denied.exit_code).not.toBe(0);
    expect(String(denied.stderr)).toContain("Read-only file system");
    expect(existsSync(pwned)).toBe(false);
    expect(await run("echo made > made-inside.txt")).toMatchObject({ exit_code: 0 });
    expect(readFileSync(join(box.path, "made-inside.txt"), "utf8")).toBe("made\n");
  });

  test("private places are hidden: /root and /run are empty, /etc/shadow unreadable, the sandbox's neighbours in /tmp absent", async () => {
    expect(await run("ls -A /root /run")).toMatchObject({ exit_code: 0, stdout: "/root:\n\n/run:\n" });
    if (existsSync("/etc/shadow")) expect(await run("cat /etc/shadow")).toMatchObject({ stdout: "", stderr: "cat: /etc/shadow: Permission denied\n" });
    const neighbour = await run(`cat ${join(outside, "secret.txt")}; echo pwned > ${join(outside, "pwned.txt")}`);
    expect(String(neighbour.stderr)).toContain("No such file or directory");
    expect(neighbour.stdout).toBe("");
    expect(readdirSync(outside)).toEqual(["secret.txt"]);
  });

  test("there is no network: only a loopback interface of its own, and the host's loopback server is unreachable", async () => {
    const devices = String((await run("cat /proc/net/dev")).stdout).split("\n").slice(2).filter(Boolean).map((line) => line.split(":")[0]!.trim());
    expect(devices).toEqual(["lo"]);
    let connections = 0;
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => (connections++, new Response("reached")) });
    try {
      expect(value(await unsandboxed.call("shell", { command: "curl", args: ["-s", `http://127.0.0.1:${server.port}/`] }, ctx)).stdout).toBe("reached"); // the server answers outside
      connections = 0;
      for (const url of [`http://127.0.0.1:${server.port}/`, "http://1.1.1.1/"]) {
        const got = value(await registry.call("shell", { command: "curl", args: ["-sS", "--max-time", "0.2", url] }, ctx));
        expect(got.exit_code).not.toBe(0);
        expect(String(got.stderr)).toMatch(/Couldn't connect|unreachable|Failed to connect/i);
      }
      expect(connections).toBe(0);
    } finally {
      await server.stop(true);
    }
  });

  test("a `setsid -f` child is gone when the call times out", async () => {
    const marker = markedSleep();
    const slow = new ToolRegistry([shellTool({ sandboxDir: box.path, timeoutMs: 1000 })]);
    const call = slow.call("shell", { command: "sh", args: ["-c", `setsid -f sleep ${marker}; sleep 30`] }, ctx);
    try {
      await waitFor(() => processesWith(marker).length > 0, "the detached sleep to run");
      expect(error(await call)).toMatchObject({ error_code: ErrorCode.TASK_TIMEOUT, timeout_ms: 1000 });
      // Not eventually: already gone when the call returns.
      expect(processesWith(marker)).toEqual([]);
    } finally {
      await call;
      for (const pid of processesWith(marker)) process.kill(pid, "SIGKILL");
    }
  });

  test("what a program leaves running, in its group or in a new session, is gone when the call returns", async () => {
    const [background, detached] = [markedSleep(), markedSleep()];
    // The detached one writes its pid once it runs; the script waits for that before exiting.
    const script = `sleep ${background} & setsid -f sh -c 'echo $$ > detached.pid; exec sleep ${detached}'; while [ ! -s detached.pid ]; do :; done; echo started`;
    try {
      expect(await run(script)).toMatchObject({ exit_code: 0, stdout: "started\n", truncated: false });
      expect(readFileSync(join(box.path, "detached.pid"), "utf8")).toMatch(/^\d+\n$/); // it ran, under a pid of the namespace
      expect([...processesWith(background), ...processesWith(detached)]).toEqual([]);
    } finally {
      for (const pid of [...processesWith(background), ...processesWith(detached)]) process.kill(pid, "SIGKILL");
    }
  });
});

describe("without a usable bubblewrap", () => {
  test("a missing bubblewrap is refused with code 7 naming the path and the option, and nothing runs", async () => {
    const missing = join(temp.path, "no-bwrap");
    const tools = new ToolRegistry([shellTool({ sandboxDir: box.path, bwrapPath: missing })]);
    const refused = error(await tools.call("shell", { command: "touch", args: ["ran.txt"] }, ctx));
    expect(refused).toMatchObject({ error_code: ErrorCode.INTERNAL, reason: `${missing} does not exist (bubblewrap is not installed; on Debian: apt-get install bubblewrap)` });
    expect(String(refused.expected)).toContain("allowUnsandboxed: true");
    expect(existsSync(join(box.path, "ran.txt"))).toBe(false);
  });

  test("a bubblewrap that cannot create namespaces is refused with its own message", async () => {
    const fake = join(temp.path, "fake-bwrap");
    writeFileSync(fake, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n");
    chmodSync(fake, 0o755);
    const tools = new ToolRegistry([shellTool({ sandboxDir: box.path, bwrapPath: fake })]);
    expect(error(await tools.call("shell", { command: "true" }, ctx))).toMatchObject({
      error_code: ErrorCode.INTERNAL,
      reason: `${fake} cannot set up a sandbox here: bwrap: No permissions to create new namespace`,
    });
  });

  test.if(!sandboxed)("on this machine the default tool refuses (bubblewrap cannot run here)", async () => {
    const tools = new ToolRegistry([shellTool({ sandboxDir: box.path })]);
    expect(error(await tools.call("shell", { command: "true" }, ctx))).toMatchObject({ error_code: ErrorCode.INTERNAL });
  });

  test("allowUnsandboxed runs the program as a plain child process, and says so", async () => {
    expect(value(await unsandboxed.call("shell", { command: "id", args: ["-u"] }, ctx))).toMatchObject({ exit_code: 0, stdout: `${process.getuid!()}\n`, sandboxed: false });
  });

  test.skipIf(!Bun.which("setsid"))("unsandboxed, a process that leaves the group survives, but cannot hold the call past the deadline", async () => {
    // The escapee writes its pid once it has left the group; the script waits for that before it exits.
    const script = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 30' & while [ ! -s escaped.pid ]; do :; done; echo started";
    const result = await unsandboxed.call("shell", { command: "sh", args: ["-c", script] }, ctx);
    process.kill(Number(readFileSync(join(box.path, "escaped.pid"), "utf8")), "SIGKILL");
    // It exited in time, so this is its result; the held pipe was cut at the deadline.
    expect(value(result)).toMatchObject({ exit_code: 0, stdout: "started\n", truncated: true, sandboxed: false });
  });

  test("unsandboxed, what a program leaves running in its group is killed with it and does not hold the call", async () => {
    // The background sleep keeps stdout open: were it left alive, the call would end in code 3.
    const got = value(await unsandboxed.call("shell", { command: "sh", args: ["-c", "sleep 30 & echo $! > sleeper.pid; echo started"] }, ctx));
    expect(got).toMatchObject({ exit_code: 0, stdout: "started\n", truncated: false });
    const pid = Number(readFileSync(join(box.path, "sleeper.pid"), "utf8"));
    await waitFor(() => !alive(pid), "the background sleep to be gone");
  });
});
