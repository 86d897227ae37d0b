/** processChild under Deno, where it spawns with node:child_process: the same behaviour as with Bun.spawn. */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { spawnDeno } from "../helpers.ts";

const FIXTURE = join(import.meta.dir, "process-child-fixture.ts");

test("on Deno: ready line, env and cwd, lines drained before the exit, spawn failures, timeouts, stop and kill", async () => {
  await using child = spawnDeno(FIXTURE, [], ["--allow-read", "--allow-env", "--allow-run"]);
  const seen = JSON.parse(await child.waitForLine(/^\{/, 30_000));
  expect(await child.proc.exited).toBe(0);
  expect(seen.pid).toBeGreaterThan(0);
  expect(seen.exit).toEqual({ code: 3, signal: null, reason: "exit code 3" });
  expect(seen.lines).toEqual(["a", "up", "tail"]);
  expect(seen.errors).toEqual(["oops"]);
  expect(seen.env).toEqual(["forty-two", "/"]);
  expect(seen.missing.message).toContain("ENOENT");
  expect(seen.early).toEqual({ name: "HermesError", message: "actor early: exited before it was ready (exit code 4)" });
  expect(seen.slow.message).toContain("not ready within 300 ms");
  expect(seen.stop).toEqual({ code: null, signal: "SIGTERM", reason: "killed by SIGTERM" });
  expect(seen.kill).toMatchObject({ code: null, signal: "SIGKILL" });
}, 60_000);
