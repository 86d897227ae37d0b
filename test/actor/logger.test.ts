/** The logger never takes its caller down: not with fields it cannot serialise, a sink that throws, or standard error on a full disk. */
import { describe, expect, test } from "bun:test";
import { openSync, closeSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../mesh/logger.ts";
import { tmpfsUnavailable, openDisk } from "../disk-full.ts";
import { BUN } from "../helpers.ts";

describe("createLogger", () => {
  test("a field JSON cannot hold still gives a line, saying so", () => {
    const lines: string[] = [];
    const log = createLogger({ actor: "echo" }, (line) => lines.push(line));
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    log.info("odd fields", { big: 1n });
    log.warn("circular", { circular });
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ level: "info", msg: "odd fields", log_error: expect.stringContaining("fields not serialisable") }),
      expect.objectContaining({ level: "warn", msg: "circular", log_error: expect.stringContaining("fields not serialisable") }),
    ]);
  });

  test("a sink that throws loses the line, not the caller", () => {
    const log = createLogger({}, () => {
      throw new Error("EPIPE");
    });
    expect(() => log.error("lost")).not.toThrow();
  });

  const skip = tmpfsUnavailable();
  test.skipIf(skip !== undefined)(`standard error on a full disk: the process lives on and the next line counts what was lost${skip ? ` (skipped: ${skip})` : ""}`, async () => {
    using disk = openDisk("tmpfs");
    const errFile = join(disk.dir, "stderr.log");
    const fd = openSync(errFile, "w");
    const child = Bun.spawn([BUN, join(import.meta.dir, "logger-stderr-fixture.ts"), disk.filler!], { stdin: "pipe", stdout: "pipe", stderr: fd });
    closeSync(fd);
    try {
      const reader = child.stdout.getReader();
      const { value } = await reader.read();
      expect(new TextDecoder().decode(value)).toContain("ready");
      disk.fill();
      child.stdin.write("go\n");
      await child.stdin.flush();
      const { value: rest } = await reader.read();
      expect(new TextDecoder().decode(rest)).toContain("alive");
      expect(await child.exited).toBe(0);
      // Lines cut short by the full disk do not parse; the one after them must.
      const parsed = readFileSync(errFile, "utf8").split("\n").flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      });
      const after = parsed.find((l) => l.msg === "after")!;
      expect(after).toMatchObject({ actor: "probe", level: "info" });
      expect(Number(after.dropped_lines)).toBeGreaterThan(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      await child.exited;
    }
  }, 20_000);
});
