/**
 * A standby host's rehearsal (src/actor/rehearsal.ts): it really runs messages through the actor
 * path, stops when told, and leaves nothing behind, also when it cannot run at all.
 */
import { afterEach, expect, test } from "bun:test";
import { readdirSync, watch, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { rehearse } from "../../src/actor/rehearsal.ts";
import { tempDir, waitFor } from "../helpers.ts";

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
  // Asked once before the set-up, after each of its two later steps, then before each round.
  expect(await rehearse(() => ++asked > 6)).toBe(3);
  expect(ownLeftovers()).toEqual(before);
}, 30_000);

test("told at once, it sets up nothing; told during the set-up, it stops there", async () => {
  const before = ownLeftovers();
  using own = tempDir("hm-rehearsal-tmp-");
  process.env.TMPDIR = own.path;
  const created: string[] = [];
  const watcher = watch(own.path, (_kind, name) => {
    if (name) created.push(String(name));
  });
  try {
    expect(await rehearse(() => true)).toBe(0);
    // The watcher has seen all that came before once it sees a file made after.
    writeFileSync(join(own.path, "after"), "");
    await waitFor(() => created.includes("after"), "the watcher caught up");
    expect(created.filter((name) => name !== "after")).toEqual([]);
  } finally {
    watcher.close();
  }
  let asked = 0;
  expect(await rehearse(() => ++asked > 2)).toBe(0);
  expect(asked).toBe(3);
  expect(ownLeftovers()).toEqual(before);
}, 30_000);

test("without a temporary directory it runs nothing and does not throw", async () => {
  process.env.TMPDIR = "/nonexistent/hermes-rehearsal-test";
  expect(tmpdir()).toBe("/nonexistent/hermes-rehearsal-test");
  expect(await rehearse()).toBe(0);
}, 30_000);
