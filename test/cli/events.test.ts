/** `hermes-mesh events`: a mesh's event logs (JSON lines and span records) printed as JSON Lines, and followed. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createRequest } from "../../mesh/envelope.ts";
import { EventLog } from "../../src/observability/event-log.ts";
import { tempDir, waitFor } from "../helpers.ts";

const CLI = join(import.meta.dir, "../../src/cli/main.ts");

function run(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI, ...args], { stdout: "pipe", stderr: "pipe", timeout: 30_000 });
  return { code: result.exitCode, out: result.stdout.toString(), err: result.stderr.toString() };
}

const parsed = (out: string) => out.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));

describe("hermes-mesh events", () => {
  test("prints a member's lines and records as JSON Lines, oldest first; every member's without a name; an unknown one exits 1", async () => {
    using dir = tempDir();
    const echo = new EventLog(join(dir.path, "logs", "echo.0.jsonl"), { actor: "echo#0" });
    const calc = new EventLog(join(dir.path, "logs", "calc.jsonl"), { actor: "calc" });
    echo.write({ event: "started" });
    const env = createRequest("client", { target_agent: "echo" }, { n: 1 }, { trace_id: "t-1" });
    echo.handled(env, Date.now(), 0.25, 1, undefined);
    calc.handled(env, Date.now(), 0.5, 2, 7, undefined);
    await echo.close();
    await calc.close();

    const one = run("events", "echo#0", "--dir", dir.path);
    expect(one.code).toBe(0);
    const lines = parsed(one.out);
    expect(lines.map((l) => l.event)).toEqual(["started", "handled"]);
    expect(lines[1]).toMatchObject({ actor: "echo#0", trace_id: "t-1", message_id: env.message_id, status: "ok", duration_ms: 0.25 });
    // The file name works too, and so does no name at all (every member).
    expect(parsed(run("events", "echo.0", "--dir", dir.path).out)).toEqual(lines);
    const all = parsed(run("events", "--dir", dir.path).out);
    expect(all.map((l) => `${l.actor} ${l.event}`).sort()).toEqual(["calc handled", "echo#0 handled", "echo#0 started"]);
    expect(all.find((l) => l.actor === "calc")).toMatchObject({ status: "error", error_code: 7, attempt: 2 });

    const unknown = run("events", "nope", "--dir", dir.path);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain("no event log of nope");
  });

  test("--follow prints what is written later, from both files, until SIGINT", async () => {
    using dir = tempDir();
    const path = join(dir.path, "logs", "sink.jsonl");
    const log = new EventLog(path, { actor: "sink" });
    log.write({ event: "started" });
    log.flush();
    const proc = Bun.spawn([process.execPath, CLI, "events", "sink", "--dir", dir.path, "--follow"], { stdout: "pipe", stderr: "pipe" });
    let out = "";
    const reader = (async () => {
      for await (const chunk of proc.stdout) out += new TextDecoder().decode(chunk);
    })();
    try {
      await waitFor(() => out.includes('"started"'), "the existing line printed", 10_000);
      const env = createRequest("client", { target_agent: "sink" }, { n: 1 }, { trace_id: "later" });
      log.handled(env, Date.now(), 1, 1, undefined);
      log.write({ event: "tool_call", tool: "x" });
      log.flush();
      await waitFor(() => parsed(out).length === 3, "the later record and line printed", 10_000);
      expect(parsed(out).map((l) => l.event).sort()).toEqual(["handled", "started", "tool_call"]);
      expect(parsed(out).find((l) => l.event === "handled")).toMatchObject({ trace_id: "later" });
      proc.kill("SIGINT");
      expect(await proc.exited).toBe(0);
      await reader;
    } finally {
      proc.kill("SIGKILL");
      await log.close();
    }
  });

  test("--follow without a member prints rotated files once and follows each log across its rotations: every record once", async () => {
    using dir = tempDir();
    const path = join(dir.path, "logs", "echo.jsonl");
    const log = new EventLog(path, { actor: "echo" }, { rotateBytes: 2000 });
    const write = (from: number, to: number) => {
      for (let n = from; n < to; n++) {
        log.handled(createRequest("client", { target_agent: "echo" }, {}, { trace_id: `t${n}` }), n, 1, 1, undefined);
        if (n % 5 === 4) log.flush();
      }
    };
    write(0, 60); // rotated already: echo.1.spans holds the older records
    const proc = Bun.spawn([process.execPath, CLI, "events", "--dir", dir.path, "--follow"], { stdout: "pipe", stderr: "pipe" });
    let out = "";
    const reader = (async () => {
      for await (const chunk of proc.stdout) out += new TextDecoder().decode(chunk);
    })();
    const printed = () => parsed(out).filter((l) => l.event === "handled").map((l) => Number(l.started_at));
    try {
      await waitFor(() => printed().length > 0, "the records so far printed", 10_000);
      // More rotations while it follows, each batch printed before the next (a follower keeping up).
      for (let n = 60; n < 120; n += 10) {
        write(n, n + 10);
        await waitFor(() => printed().includes(n + 9), `record ${n + 9} printed`, 10_000);
      }
      proc.kill("SIGINT");
      expect(await proc.exited).toBe(0);
      await reader;
      const records = printed();
      // The oldest rotated away for good (one previous file is kept); from there on, each once and in order.
      expect(records).toEqual(Array.from({ length: records.length }, (_, i) => 120 - records.length + i));
      expect(records.length).toBeGreaterThan(60);
    } finally {
      proc.kill("SIGKILL");
      await log.close();
    }
  }, 30_000);
});
