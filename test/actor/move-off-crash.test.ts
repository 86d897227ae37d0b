/**
 * What a crash leaves unacknowledged moves to a healthy sibling when the instance does not keep
 * its dedupe memory across a restart, and waits for the instance when it does (docs/actors.md,
 * "When an instance crashes"). Real processes, real kill -9; the killed instance's restart is
 * made slow (2 s in init) so that who answers, and when, tells the two apart.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Destination } from "../../src/actor/actor-context.ts";
import { tempDir, waitFor } from "../helpers.ts";
import { startTestMesh, type TestMesh } from "./mesh-harness.ts";

const POOL = ["work#0", "work#1"];

/**
 * A pool of two holders, both registered (durable or not, as their entries say), with a file
 * for each of them to write (`file(name)`) and `slowStart(ms)` for the next restarts.
 */
async function startPool(durable: boolean) {
  const files = tempDir();
  const slow = join(files.path, "slow-start");
  const t = await startTestMesh(`
mesh:
  name: move-off
supervisor:
  intensity: 20
  period_ms: 5000
  children:
    - actor: work
      module: {FIXTURES}/holder.ts
      pool: 2
      durable: ${durable}
      env: { HOLDER_SLOW_START: "${slow}" }
`).catch((error) => {
    files[Symbol.dispose]();
    throw error;
  });
  const client = await t.client();
  await waitFor(() => POOL.every((a) => client.registry.byAddress(a)?.durable === durable), `both instances registered with durable: ${durable}`);
  return {
    t, client,
    file: (name: string) => join(files.path, name),
    slowStart: (ms: number) => writeFileSync(slow, String(ms)),
    async [Symbol.asyncDispose]() {
      await t[Symbol.asyncDispose]();
      files[Symbol.dispose]();
    },
  };
}

/** Waits until an instance holds the message (its marker says `attempt`), and names it and its sibling. */
async function holderOf(t: TestMesh, marker: string, attempt = 1): Promise<{ victim: string; sibling: string; pid: number }> {
  let pid = 0;
  await waitFor(() => {
    const [seen, holder] = existsSync(marker) ? readFileSync(marker, "utf8").split(" ") : [];
    if (Number(seen) !== attempt) return false;
    pid = Number(holder);
    return true;
  }, `an instance holding delivery ${attempt}`, 10_000);
  const victim = POOL.find((address) => t.pid(address) === pid)!;
  expect(victim).toBeDefined();
  return { victim, sibling: POOL.find((address) => address !== victim)!, pid };
}

/** The same, killed with -9. */
async function killHolder(t: TestMesh, marker: string): Promise<{ victim: string; sibling: string }> {
  const holder = await holderOf(t, marker);
  process.kill(holder.pid, "SIGKILL");
  return holder;
}

describe("an instance killed with what it was handling", () => {
  const routes: Array<[string, Destination]> = [["by capability", { capability: "work" }], ["by the pool's name", "work"]];

  for (const [how, route] of routes) {
    test(`not durable, a request sent ${how} is answered by the healthy sibling while the instance restarts`, async () => {
      await using pool = await startPool(false);
      const { t, client } = pool;
      pool.slowStart(2000);
      const marker = pool.file("held");
      const answer = client.request(route, { op: "hold", marker }, { timeoutMs: 20_000 });
      const { victim, sibling } = await killHolder(t, marker);
      const reply = await answer;
      expect(reply.payload).toEqual({ address: sibling, pid: t.pid(sibling), attempt: 2 });
      expect(reply.source_agent).toBe(sibling);
      // Answered in the victim's slow restart, not after it.
      expect(t.mesh.registry.byAddress(victim)!.health).not.toBe("healthy");
    }, 30_000);
  }

  test("not durable, an event is handled by the healthy sibling while the instance restarts", async () => {
    await using pool = await startPool(false);
    const { t, client } = pool;
    pool.slowStart(2000);
    const [marker, seen] = [pool.file("held"), pool.file("seen")];
    await client.send({ capability: "work" }, { op: "hold", marker, seen });
    const { victim, sibling } = await killHolder(t, marker);
    await waitFor(() => existsSync(seen) && readFileSync(seen, "utf8").length > 0, "the event handled again", 10_000);
    expect(JSON.parse(readFileSync(seen, "utf8"))).toEqual({ address: sibling, pid: t.pid(sibling), attempt: 2 });
    expect(t.mesh.registry.byAddress(victim)!.health).not.toBe("healthy");
  }, 30_000);

  test("a message moves once: killed again on the sibling, it waits for the sibling's restart", async () => {
    await using pool = await startPool(false);
    const { t, client } = pool;
    const marker = pool.file("held");
    const answer = client.request({ capability: "work" }, { op: "hold", marker, holds: 2 }, { timeoutMs: 20_000 });
    const first = await killHolder(t, marker);
    const second = await holderOf(t, marker, 2);
    expect(second.victim).toBe(first.sibling);
    // The first victim is back and healthy before the second goes, and the second's restart takes
    // its time: the message waits for the second all the same.
    await waitFor(() => client.registry.byAddress(first.victim)?.health === "healthy", "the first victim back");
    pool.slowStart(1500);
    process.kill(second.pid, "SIGKILL");
    const reply = await answer;
    expect(reply.payload.address).toBe(second.victim);
    expect(reply.payload.attempt).toBe(3);
  }, 30_000);

  test("durable, a request waits for the instance's restart and is answered there", async () => {
    await using pool = await startPool(true);
    const { t, client } = pool;
    pool.slowStart(1000);
    const marker = pool.file("held");
    const answer = client.request({ capability: "work" }, { op: "hold", marker }, { timeoutMs: 20_000 });
    const { victim } = await killHolder(t, marker);
    const reply = await answer;
    expect(reply.payload).toEqual({ address: victim, pid: t.pid(victim), attempt: 2 });
  }, 30_000);
});
