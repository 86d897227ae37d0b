/**
 * A standby host's rehearsal (src/actor/rehearsal.ts): it really runs messages through the actor
 * path, stops when told, and leaves nothing behind, also when it cannot run at all.
 */
import { afterEach, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { rehearse } from "../../src/actor/rehearsal.ts";

const ownLeftovers = () => readdirSync(tmpdir()).filter((name) => name.startsWith("hermes-standby-"));
const tmpBefore = process.env.TMPDIR;
afterEach(() => {
  if (tmpBefore === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = tmpBefore;
});

test("runs every round of requests and events, and removes its socket and log", async () => {
  const before = ownLeftovers();
  expect(await rehearse()).toBe(10);
  expect(ownLeftovers()).toEqual(before);
}, 30_000);

test("stops between rounds once told to, and still cleans up", async () => {
  const before = ownLeftovers();
  let asked = 0;
  expect(await rehearse(() => ++asked > 3)).toBe(3);
  expect(ownLeftovers()).toEqual(before);
}, 30_000);

test("without a temporary directory it runs nothing and does not throw", async () => {
  process.env.TMPDIR = "/nonexistent/hermes-rehearsal-test";
  expect(tmpdir()).toBe("/nonexistent/hermes-rehearsal-test");
  expect(await rehearse()).toBe(0);
}, 30_000);
