import { describe, expect, test } from "bun:test";
import { statSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { listen } from "../../mesh/socket-transport.ts";
import { ErrorCode } from "../../mesh/errors.ts";
import { spawnBun, tempDir } from "../helpers.ts";

const FIXTURE = join(import.meta.dir, "echo-server-fixture.ts");
const noop = { node: "t", onConnection() {} };

describe("socket files", () => {
  test("the directory is created 0700 and the socket 0600; close removes the socket", async () => {
    using dir = tempDir();
    const path = join(dir.path, "mesh", "a.sock");
    const listener = await listen({ path }, noop);
    try {
      expect(statSync(join(dir.path, "mesh")).mode & 0o777).toBe(0o700);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(statSync(path).isSocket()).toBe(true);
    } finally {
      await listener.close();
    }
    expect(existsSync(path)).toBe(false);
  });

  test("a stale socket file from a process killed with SIGKILL is replaced", async () => {
    using dir = tempDir();
    const path = join(dir.path, "echo.sock");
    {
      await using child = spawnBun(FIXTURE, [path]);
      await child.waitForLine(/^ready/);
      child.proc.kill("SIGKILL");
      await child.proc.exited;
    }
    expect(statSync(path).isSocket()).toBe(true); // left behind by the dead process
    const listener = await listen({ path }, noop);
    await listener.close();
  });

  test("a socket a live process answers on is never stolen", async () => {
    using dir = tempDir();
    const path = join(dir.path, "echo.sock");
    await using child = spawnBun(FIXTURE, [path]);
    await child.waitForLine(/^ready/);
    const error = await listen({ path }, noop).catch((e) => e);
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.message).toContain("live process");
    expect(child.proc.exitCode).toBeNull();
    expect(statSync(path).isSocket()).toBe(true);
  });

  test("a regular file in the way is never deleted", async () => {
    using dir = tempDir();
    const path = join(dir.path, "echo.sock");
    writeFileSync(path, "precious");
    const error = await listen({ path }, noop).catch((e) => e);
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(statSync(path).isFile()).toBe(true);
  });
});
