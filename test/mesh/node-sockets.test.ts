/**
 * The second socket adapter: the whole transport conformance suite again, with node:net sockets
 * (what Deno provides) instead of Bun's, in a process of its own so that the choice
 * (HERMES_SOCKET_RUNTIME=node) reaches the sender and every receiver it spawns.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";

test("the transport conformance suite passes over node:net sockets, Unix and TCP", () => {
  const run = Bun.spawnSync([process.execPath, "test", "--timeout", "30000", join(import.meta.dir, "transport.test.ts")], {
    cwd: join(import.meta.dir, "../.."),
    env: { ...process.env, HERMES_SOCKET_RUNTIME: "node" },
    stdout: "pipe",
    stderr: "pipe",
    timeout: 120_000,
  });
  const report = run.stderr.toString();
  expect(report).toMatch(/\b0 fail\b/);
  expect(report).toMatch(/\b(2[5-9]|[3-9]\d) pass\b/);
  expect(run.exitCode).toBe(0);
}, 130_000);
