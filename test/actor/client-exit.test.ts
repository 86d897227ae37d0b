/** A script that closes its mesh client exits at once: nothing is left running after close(). */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { spawnBun } from "../helpers.ts";
import { startTestMesh, type TestMesh } from "./mesh-harness.ts";

let t: TestMesh;
beforeAll(async () => {
  t = await startTestMesh(`
mesh:
  name: client-exit
supervisor:
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
`);
});
afterAll(async () => {
  await t?.[Symbol.asyncDispose]();
});

test("the process exits within a few hundred ms of close() (a 1 s timer used to keep it alive)", async () => {
  await using script = spawnBun(join(import.meta.dir, "client-exit-fixture.ts"), [t.dir]);
  const line = await script.waitForLine(/^closed /);
  const closedAt = Number(line.split(" ").at(-1));
  expect(line).toContain('{"hello":"exit"}');
  await script.proc.exited;
  const lingerMs = Date.now() - closedAt;
  expect(script.proc.exitCode).toBe(0);
  expect(lingerMs).toBeLessThan(400);
});
