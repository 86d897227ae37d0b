/**
 * How a mesh starts its actors: in order, each after the previous one is ready, and each
 * "started" event saying where that start's time went; a restart tells the registry at once
 * that the instance is starting again, with its new pid.
 */
import { describe, expect, test } from "bun:test";
import type { RegistryUpdate } from "../../mesh/registry.ts";
import { startTestMesh } from "../actor/mesh-harness.ts";
import { waitFor } from "../helpers.ts";

const STEPS = ["spawned", "loaded", "imported", "registered", "ready"];

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
    for (const { startup, pid, child } of started) {
      expect(Object.keys(startup!)).toEqual(STEPS); // a fresh spawn: no standby at start-up
      const times = STEPS.map((step) => startup![step]!);
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(t.mesh.registry.byAddress(child)).toMatchObject({ health: "healthy", pid });
    }
  }, 30_000);

  test("a restart says at once the instance is starting again, with its pid, and is healthy once ready", async () => {
    await using t = await startTestMesh(`
mesh: { name: start-restart }
supervisor:
  children:
    - { actor: solo, module: {ACTORS}/echo.ts }
`);
    const updates: RegistryUpdate[] = [];
    t.mesh.registry.onUpdate((u) => updates.push(u));
    const before = t.pid("solo");
    process.kill(before, "SIGKILL");
    const back = () => {
      const entry = t.mesh.registry.byAddress("solo");
      return entry?.health === "healthy" && entry.pid !== undefined && entry.pid !== before;
    };
    await waitFor(back, "solo back", 10_000);
    const health = updates.flatMap((u) => (u.type === "patch" && u.changes.health ? [[u.changes.health, u.changes.pid]] : []));
    const pid = t.pid("solo");
    expect(pid).not.toBe(before);
    expect(health).toEqual([["down", undefined], ["starting", pid], ["healthy", undefined]]);
    const restart = t.events.findLast((e) => e.type === "started");
    expect(restart).toMatchObject({ child: "solo", pid, restarts: 1 });
    await waitFor(() => t.mesh.registry.byAddress("solo")?.restarts === 1, "the restart counted in the registry");
  }, 30_000);
});
