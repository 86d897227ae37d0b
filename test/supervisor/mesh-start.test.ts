/**
 * How a mesh starts its actors: in order, each after the previous one is ready (the next one's
 * host loading meanwhile), and each "started" event saying where that start's time went; a restart tells the registry at once
 * that the instance is starting again, with its new pid.
 */
import { describe, expect, test } from "bun:test";
import { joinMesh, type MeshMember } from "../../mesh/join.ts";
import type { RegistryUpdate } from "../../mesh/registry.ts";
import { startTestMesh } from "../actor/mesh-harness.ts";
import { waitFor } from "../helpers.ts";

const STEPS = ["spawned", "loaded", "imported", "registered", "ready"];
const WITH_SPARE = [...STEPS.slice(0, 3), "standby", ...STEPS.slice(3)];
const SPARES = process.env.HERMES_ACTOR_STANDBY !== "0";

describe("mesh start", () => {
  test("actors start in order, each started event with its steps in order", async () => {
    await using t = await startTestMesh(`
mesh: { name: start-order }
supervisor:
  children:
    - { actor: echo, module: {ACTORS}/echo.ts, pool: 3 }
    - { actor: solo, module: {ACTORS}/echo.ts }
`);
    const started = t.events.flatMap((e) => (e.type === "started" ? [e] : []));
    expect(started.map((e) => e.child)).toEqual(["echo#0", "echo#1", "echo#2", "solo"]);
    for (const [i, { startup, pid, child }] of started.entries()) {
      // The first child is spawned fresh; each later one takes the spare that loaded beside the
      // start before it (unless spares are turned off where the suite runs).
      expect(Object.keys(startup!)).toEqual(i === 0 || !SPARES ? STEPS : WITH_SPARE);
      const times = STEPS.map((step) => startup![step]!);
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(t.mesh.registry.byAddress(child)).toMatchObject({ health: "healthy", pid });
    }
  }, 30_000);

  test.skipIf(!SPARES)("no spare is prepared for children that cannot take one (an env read at start-up)", async () => {
    await using t = await startTestMesh(`
mesh: { name: start-fresh }
supervisor:
  children:
    - { actor: zoned, module: {ACTORS}/echo.ts, pool: 2, env: { TZ: UTC } }
    - { actor: echo, module: {ACTORS}/echo.ts, pool: 2 }
`);
    const withSpare = t.events.flatMap((e) => (e.type === "started" && e.startup?.standby ? [e.child] : []));
    // Only echo#0's spawn prepared one, for echo#1: none waited through the zoned starts.
    expect(withSpare).toEqual(["echo#1"]);
  }, 30_000);

  test("a pool instance's restart is announced at once (starting, with its pid) and healthy once ready; a lone instance's once, healthy with its new pid", async () => {
    await using t = await startTestMesh(`
mesh: { name: start-restart }
supervisor:
  intensity: 10
  children:
    - { actor: solo, module: {ACTORS}/echo.ts }
    - { actor: duo, module: {ACTORS}/calculator.ts, pool: 2 }
`);
    const updates: RegistryUpdate[] = [];
    t.mesh.registry.onUpdate((u) => updates.push(u));
    const healthOf = (address: string) =>
      updates.flatMap((u) => (u.type === "patch" && u.address === address && u.changes.health ? [[u.changes.health, u.changes.pid]] : []));
    for (const address of ["duo#1", "solo"]) {
      const before = t.pid(address);
      process.kill(before, "SIGKILL");
      const back = () => {
        const entry = t.mesh.registry.byAddress(address);
        return entry?.health === "healthy" && entry.pid !== undefined && entry.pid !== before;
      };
      await waitFor(back, `${address} back`, 10_000);
      const pid = t.pid(address);
      expect(pid).not.toBe(before);
      const restart = t.events.findLast((e) => e.type === "started");
      expect(restart).toMatchObject({ child: address, pid, restarts: 1 });
      await waitFor(() => t.mesh.registry.byAddress(address)?.restarts === 1, "the restart counted in the registry");
    }
    expect(healthOf("duo#1")).toEqual([["down", undefined], ["starting", t.pid("duo#1")], ["healthy", undefined]]);
    // Within RESTART_HOLD_MS on any machine this suite runs on (a restart takes tens of ms):
    // one update in all, with the restart count, and nothing after it.
    const solo = updates.filter((u) => u.type === "patch" && u.address === "solo");
    expect(solo).toHaveLength(1);
    expect(solo[0]).toMatchObject({ changes: { health: "healthy", pid: t.pid("solo"), restarts: 1 } });
  }, 30_000);

  /**
   * Starts a pool of 4 with a member watching from the first instance's start on; returns the
   * batches of "healthy" updates (one registry event each) it got about the others, once it sees
   * all healthy, and which of them its join's snapshot already had healthy (a slow join).
   */
  async function watchStart(startUpdateHoldMs: number): Promise<{ batches: string[][]; known: string[] }> {
    let watcher: Promise<MeshMember> | undefined;
    const batches: string[][] = [];
    let inBatch = false;
    let known: string[] = [];
    await using t = await startTestMesh(`
mesh: { name: start-hold-${startUpdateHoldMs} }
supervisor:
  children:
    - { actor: echo, module: {ACTORS}/echo.ts, pool: 4 }
`, {
      startUpdateHoldMs,
      onEvent: (event, dir) => {
        if (event.type !== "started" || event.child !== "echo#0" || watcher) return;
        watcher = joinMesh({ dir, address: "watcher" }).then((member) => {
          known = OTHERS.filter((a) => member.registry.byAddress(a)?.health === "healthy");
          member.registry.onUpdate((u) => {
            if (u.type !== "patch" || u.changes.health !== "healthy") return;
            // Updates of one event are applied in one synchronous run.
            if (!inBatch) {
              inBatch = true;
              batches.push([]);
              queueMicrotask(() => (inBatch = false));
            }
            batches.at(-1)!.push(u.address);
          });
          return member;
        });
        // Awaited below; a failed join fails the test there.
        watcher.catch(() => {});
      },
    });
    const member = await watcher!;
    try {
      const healthy = () => OTHERS.every((a) => member.registry.byAddress(a)?.health === "healthy");
      await waitFor(healthy, "the watcher to see every instance healthy");
      return { batches, known };
    } finally {
      await member.close();
    }
  }
  const OTHERS = ["echo#1", "echo#2", "echo#3"];

  test("while the tree starts, members hear of the starts when the hold ends, all in one event", async () => {
    // A hold longer than the test: only the end of the start can have sent them.
    const { batches, known } = await watchStart(60_000);
    expect(known).not.toEqual(OTHERS);
    expect(batches).toEqual([OTHERS.filter((a) => !known.includes(a))]);
  }, 30_000);

  test("with startUpdateHoldMs 0 each start is announced as it happens", async () => {
    const { batches, known } = await watchStart(0);
    expect(known).not.toEqual(OTHERS);
    expect(batches).toEqual(OTHERS.filter((a) => !known.includes(a)).map((a) => [a]));
  }, 30_000);
});
