/**
 * What the supervisor's registry announces: a starting instance once, when its health changes,
 * with what it got meanwhile; a lone instance's restart once, when it is back; nothing for a
 * patch that changes nothing; its own state at once.
 */
import { describe, expect, test } from "bun:test";
import type { RegistryEntry, RegistryUpdate } from "../../mesh/registry.ts";
import { SupervisorRegistry } from "../../src/supervisor/supervisor-registry.ts";
import { waitFor } from "../helpers.ts";

const entry = (address: string, health: RegistryEntry["health"]): RegistryEntry => ({
  name: address, instance: 0, address, id: `id-${address}`, socket: `/tmp/${address}.sock`, capabilities: [], subscriptions: [],
  health, kind: "actor", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 1,
});

function recorded(): { registry: SupervisorRegistry; announced: RegistryUpdate[]; seen: RegistryUpdate[] } {
  const seen: RegistryUpdate[] = [];
  const registry = new SupervisorRegistry((u) => seen.push(u));
  const announced: RegistryUpdate[] = [];
  registry.onUpdate((u) => announced.push(u));
  return { registry, announced, seen };
}

describe("SupervisorRegistry", () => {
  test("a starting instance is announced once, with its health, carrying what it got meanwhile", () => {
    const { registry, announced, seen } = recorded();
    registry.upsert(entry("echo", "starting"));
    registry.patch("echo", { health: "starting", pid: 42, updatedAt: 2 });
    registry.patch("echo", { capabilities: ["echo"], subscriptions: ["demo.#"], updatedAt: 3 });
    // Held from the mesh, but the supervisor's own record is current.
    expect(announced.map((u) => u.type)).toEqual(["upsert"]);
    expect(registry.byAddress("echo")).toMatchObject({ pid: 42, capabilities: ["echo"], health: "starting" });
    expect(registry.withCapability("echo").map((e) => e.address)).toEqual(["echo"]);
    registry.patch("echo", { health: "healthy", updatedAt: 4 });
    expect(announced.slice(1)).toEqual([
      { type: "patch", address: "echo", changes: { health: "healthy", pid: 42, capabilities: ["echo"], subscriptions: ["demo.#"], updatedAt: 4 } },
    ]);
    expect(seen).toHaveLength(4); // every update, held or not
  });

  test("a pool instance's change of health, a restart's 'starting' included, goes out at once; so does anything about a running instance", () => {
    const { registry, announced } = recorded();
    registry.upsert({ ...entry("echo#0", "healthy"), name: "echo" });
    registry.upsert({ ...entry("echo#1", "healthy"), name: "echo", instance: 1 });
    registry.patch("echo#0", { queueDepth: 3, updatedAt: 2 });
    registry.patch("echo#0", { health: "down", pid: undefined, updatedAt: 3 });
    registry.patch("echo#0", { health: "starting", pid: 43, updatedAt: 4 });
    expect(announced.slice(2).map((u) => u.type === "patch" && u.changes)).toEqual([
      { queueDepth: 3, updatedAt: 2 },
      { health: "down", pid: undefined, updatedAt: 3 },
      { health: "starting", pid: 43, updatedAt: 4 },
    ]);
  });

  test("a lone instance restarted in time is announced once, healthy with its new pid; its down never wakes the mesh", () => {
    const { registry, announced, seen } = recorded();
    registry.upsert({ ...entry("echo", "healthy"), pid: 42 });
    registry.restartsOf("echo");
    registry.patch("echo", { health: "down", pid: undefined, updatedAt: 3 });
    registry.patch("echo", { health: "starting", pid: 43, updatedAt: 4 });
    registry.patch("echo", { capabilities: ["echo"], updatedAt: 5 });
    expect(announced).toHaveLength(1);
    expect(registry.byAddress("echo")).toMatchObject({ health: "starting", pid: 43 });
    registry.patch("echo", { health: "healthy", updatedAt: 6 });
    expect(announced.slice(1)).toEqual([{ type: "patch", address: "echo", changes: { health: "healthy", pid: 43, capabilities: ["echo"], updatedAt: 6 } }]);
    expect(seen).toHaveLength(5);
    // Running again: its next change goes out at once.
    registry.patch("echo", { queueDepth: 2, updatedAt: 7 });
    expect(announced.at(-1)).toEqual({ type: "patch", address: "echo", changes: { queueDepth: 2, updatedAt: 7 } });
  });

  test("a lone instance not back within restartHoldMs is announced as it stands, and then as any start", async () => {
    const seen: RegistryUpdate[] = [];
    const registry = new SupervisorRegistry((u) => seen.push(u), { restartHoldMs: 20 });
    const announced: RegistryUpdate[] = [];
    registry.onUpdate((u) => announced.push(u));
    const heldAt = performance.now();
    registry.upsert(entry("echo", "healthy"));
    registry.restartsOf("echo");
    registry.patch("echo", { health: "down", pid: undefined, updatedAt: 3 });
    expect(announced).toHaveLength(1);
    await waitFor(() => announced.length >= 2, "the held down announced");
    expect(performance.now() - heldAt).toBeGreaterThanOrEqual(19);
    expect(announced[1]).toEqual({ type: "patch", address: "echo", changes: { health: "down", pid: undefined, updatedAt: 3 } });
    // Its restart now: a change of health goes out at once, what it gets while starting is held.
    registry.patch("echo", { health: "starting", pid: 44, updatedAt: 4 });
    registry.patch("echo", { capabilities: ["echo"], updatedAt: 5 });
    registry.patch("echo", { health: "healthy", updatedAt: 6 });
    expect(announced.slice(2).map((u) => u.type === "patch" && u.changes)).toEqual([
      { health: "starting", pid: 44, updatedAt: 4 },
      { capabilities: ["echo"], health: "healthy", updatedAt: 6 },
    ]);
  });

  test("a down is announced at once for an instance nobody restarts, one sharing a capability with another actor, and with a hold of 0", () => {
    const { registry, announced } = recorded();
    registry.upsert(entry("outside", "healthy")); // an external member, a client: no restartsOf
    registry.patch("outside", { health: "down" });
    registry.upsert({ ...entry("calc-a", "healthy"), capabilities: ["calc"] });
    registry.upsert({ ...entry("calc-b", "healthy"), capabilities: ["calc"] });
    registry.restartsOf("calc-a");
    registry.patch("calc-a", { health: "down" }); // routing by capability turns to calc-b on it
    expect(announced.filter((u) => u.type === "patch").map((u) => u.type === "patch" && [u.address, u.changes.health])).toEqual([["outside", "down"], ["calc-a", "down"]]);
    const prompt = new SupervisorRegistry(undefined, { restartHoldMs: 0 });
    const told: RegistryUpdate[] = [];
    prompt.onUpdate((u) => told.push(u));
    prompt.upsert(entry("echo", "healthy"));
    prompt.restartsOf("echo");
    prompt.patch("echo", { health: "down" });
    expect(told.at(-1)).toEqual({ type: "patch", address: "echo", changes: { health: "down" } });
  });

  test("a held down goes out when no restart follows; a second crash while held stays in the hold; remove and snapshot end it", () => {
    const { registry, announced } = recorded();
    registry.upsert(entry("solo", "healthy"));
    registry.restartsOf("solo");
    registry.patch("solo", { health: "down", pid: undefined });
    registry.patch("solo", { health: "starting", pid: 7 });
    registry.patch("solo", { health: "down", pid: undefined }); // its start failed
    expect(announced).toHaveLength(1);
    registry.noRestart("solo"); // the supervisor gave up
    expect(announced.at(-1)).toEqual({ type: "patch", address: "solo", changes: { health: "down", pid: undefined } });
    registry.noRestart("solo"); // nothing held: nothing more
    expect(announced).toHaveLength(2);
    registry.patch("solo", { health: "healthy", pid: 8 });
    registry.patch("solo", { health: "down", pid: undefined });
    registry.remove("solo");
    expect(announced.slice(-2).map((u) => u.type)).toEqual(["patch", "remove"]);
    registry.upsert(entry("solo", "healthy"));
    registry.patch("solo", { health: "down" }); // removed, so no longer one this supervisor restarts
    expect(announced.at(-1)).toEqual({ type: "patch", address: "solo", changes: { health: "down" } });
    registry.upsert(entry("other", "healthy"));
    registry.restartsOf("other");
    registry.patch("other", { health: "down" });
    const before = announced.length;
    registry.applyUpdate({ type: "snapshot", entries: [entry("other", "healthy")] });
    registry.patch("other", { queueDepth: 1 });
    expect(announced.slice(before).map((u) => u.type)).toEqual(["snapshot", "patch"]);
  });

  test("a patch that changes nothing but updatedAt is not announced, though it is seen", () => {
    const { registry, announced, seen } = recorded();
    registry.upsert({ ...entry("echo", "healthy"), capabilities: ["echo"] });
    expect(registry.patch("echo", { capabilities: ["echo"], subscriptions: [], updatedAt: 9 })).toBe(true);
    expect(announced).toHaveLength(1);
    expect(seen).toHaveLength(2);
    expect(registry.patch("ghost", { health: "healthy" })).toBe(false); // unknown, as before
  });

  test("an instance that goes away while starting takes what was held with it", () => {
    const { registry, announced } = recorded();
    registry.upsert(entry("a", "starting"));
    registry.patch("a", { pid: 7 });
    registry.remove("a");
    registry.upsert(entry("a", "starting"));
    registry.patch("a", { health: "healthy" });
    expect(announced.at(-1)).toEqual({ type: "patch", address: "a", changes: { health: "healthy" } });
  });
});
