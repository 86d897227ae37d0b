import { describe, expect, test } from "bun:test";
import { parseRegistryUpdate, Registry, type RegistryUpdate, type RegistryEntry } from "../../mesh/registry.ts";
import { ErrorCode } from "../../mesh/errors.ts";

function entry(name: string, instance: number, more: Partial<RegistryEntry> = {}): RegistryEntry {
  const address = more.address ?? `${name}#${instance}`;
  return {
    name, instance, address, id: `id-${address}`, socket: `/run/${address}.sock`,
    capabilities: [], subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 1,
    ...more,
  };
}

const addresses = (entries: readonly RegistryEntry[]) => entries.map((e) => e.address);

describe("Registry", () => {
  test("known lists what a route of each kind can reach, never clients", () => {
    const registry = new Registry();
    registry.upsert(entry("calc", 0, { address: "calc", capabilities: ["calculator", "math"], subscriptions: ["task.#"] }));
    registry.upsert(entry("echo", 0, { capabilities: ["echo"] }));
    registry.upsert(entry("echo", 1, { capabilities: ["echo"] }));
    registry.upsert(entry("cli-01abc", 0, { address: "cli-01abc", kind: "client", subscriptions: ["spy.#"] }));
    expect(registry.known()).toEqual(["calc", "echo"]);
    expect(registry.known("capability")).toEqual(["calculator", "echo", "math"]);
    expect(registry.known("topic")).toEqual(["task.#"]);
  });

  test("upsert, patch, remove and snapshot; listeners hear each applied update", () => {
    const registry = new Registry();
    const heard: RegistryUpdate[] = [];
    const stop = registry.onUpdate((u) => heard.push(u));
    registry.upsert(entry("echo", 0));
    registry.upsert(entry("echo", 1));
    expect(registry.patch("echo#1", { health: "unhealthy", queueDepth: 3 })).toBe(true);
    expect(registry.byAddress("echo#1")).toMatchObject({ health: "unhealthy", queueDepth: 3, name: "echo" });
    expect(registry.patch("nobody", { health: "down" })).toBe(false);
    expect(registry.remove("echo#0")).toBe(true);
    expect(registry.remove("echo#0")).toBe(false);
    expect(addresses(registry.snapshot())).toEqual(["echo#1"]);
    expect(heard.map((u) => u.type)).toEqual(["upsert", "upsert", "patch", "remove"]);
    stop();
    registry.upsert(entry("x", 0));
    expect(heard).toHaveLength(4);
  });

  test("updates are plain JSON: a replica fed the JSON of every update ends up equal", () => {
    const primary = new Registry();
    const replica = new Registry();
    primary.onUpdate((u) => replica.applyUpdate(parseRegistryUpdate(JSON.parse(JSON.stringify(u)))));
    primary.upsert(entry("echo", 0, { capabilities: ["echo"], subscriptions: ["demo.#"] }));
    primary.upsert(entry("echo", 1, { capabilities: ["echo"], subscriptions: ["demo.#"] }));
    primary.patch("echo#0", { inFlight: 2, pid: 42 });
    primary.remove("echo#1");
    expect(replica.snapshot()).toEqual(primary.snapshot());
    expect(addresses(replica.subscribersOf("demo.x")[0]!.instances)).toEqual(["echo#0"]);
  });

  test("a snapshot update replaces everything, indexes included", () => {
    const registry = new Registry();
    registry.upsert(entry("old", 0, { capabilities: ["c"], subscriptions: ["a.#"] }));
    registry.applyUpdate({ type: "snapshot", entries: [entry("new", 0, { capabilities: ["c"] })] });
    expect(registry.known()).toEqual(["new"]);
    expect(addresses(registry.withCapability("c"))).toEqual(["new#0"]);
    expect(registry.subscribersOf("a.b")).toEqual([]);
  });

  test("byName lists a pool in instance order whatever the insertion order; resolveTarget takes names, addresses and ids", () => {
    const registry = new Registry();
    registry.upsert(entry("echo", 2));
    registry.upsert(entry("echo", 0));
    registry.upsert(entry("echo", 1));
    registry.upsert(entry("solo", 0, { address: "solo", id: "2f1c0e7a-0000-4000-8000-000000000000" }));
    expect(addresses(registry.byName("echo"))).toEqual(["echo#0", "echo#1", "echo#2"]);
    expect(addresses(registry.resolveTarget("echo"))).toEqual(["echo#0", "echo#1", "echo#2"]);
    expect(addresses(registry.resolveTarget("echo#1"))).toEqual(["echo#1"]);
    expect(addresses(registry.resolveTarget("solo"))).toEqual(["solo"]);
    expect(addresses(registry.resolveTarget("2f1c0e7a-0000-4000-8000-000000000000"))).toEqual(["solo"]);
    expect(registry.byId("id-echo#2")?.address).toBe("echo#2");
    expect(registry.resolveTarget("ghost")).toEqual([]);
    expect(registry.known()).toEqual(["echo", "solo"]);
  });

  test("withCapability follows patches that change capabilities", () => {
    const registry = new Registry();
    registry.upsert(entry("a", 0, { capabilities: ["ocr", "echo"] }));
    registry.upsert(entry("b", 0, { capabilities: ["ocr"] }));
    expect(addresses(registry.withCapability("ocr"))).toEqual(["a#0", "b#0"]);
    registry.patch("a#0", { capabilities: ["echo"] });
    expect(addresses(registry.withCapability("ocr"))).toEqual(["b#0"]);
    expect(addresses(registry.withCapability("echo"))).toEqual(["a#0"]);
    expect(registry.withCapability("nothing")).toEqual([]);
    // Kept between updates (and frozen, as every caller shares it), never past one.
    const kept = registry.withCapability("ocr");
    expect(registry.withCapability("ocr")).toBe(kept);
    expect(Object.isFrozen(kept)).toBe(true);
    registry.patch("b#0", { health: "unhealthy" });
    expect(registry.withCapability("ocr")[0]!.health).toBe("unhealthy");
    registry.upsert(entry("c", 0, { capabilities: ["ocr"] }));
    expect(addresses(registry.withCapability("ocr"))).toEqual(["b#0", "c#0"]);
    registry.remove("b#0");
    expect(addresses(registry.withCapability("ocr"))).toEqual(["c#0"]);
  });

  test("subscribersOf groups a pool into one delivery and follows subscription changes", () => {
    const registry = new Registry();
    registry.upsert(entry("log", 1, { subscriptions: ["#"] }));
    registry.upsert(entry("log", 0, { subscriptions: ["#"] }));
    registry.upsert(entry("img", 0, { subscriptions: ["task.*.generate", "task.#"] }));
    registry.upsert(entry("other", 0, { subscriptions: ["misc.*"] }));
    const groups = registry.subscribersOf("task.image.generate");
    expect(groups.map((g) => [g.name, addresses(g.instances)])).toEqual([
      ["img", ["img#0"]],
      ["log", ["log#0", "log#1"]],
    ]);
    registry.patch("img#0", { subscriptions: ["misc.*"] });
    expect(registry.subscribersOf("task.image.generate").map((g) => g.name)).toEqual(["log"]);
    expect(registry.subscribersOf("misc.x").map((g) => g.name)).toEqual(["img", "log", "other"]);
  });

  test("a load-only patch keeps the indexes and the new values are visible through them", () => {
    const registry = new Registry();
    registry.upsert(entry("w", 0, { capabilities: ["c"], subscriptions: ["t"] }));
    registry.patch("w#0", { queueDepth: 7 });
    expect(registry.withCapability("c")[0]!.queueDepth).toBe(7);
    expect(registry.subscribersOf("t")[0]!.instances[0]!.queueDepth).toBe(7);
    expect(registry.byName("w")[0]!.queueDepth).toBe(7);
  });

  test("stored entries are copies: mutating the caller's object changes nothing", () => {
    const registry = new Registry();
    const mine = entry("w", 0, { capabilities: ["c"] });
    registry.upsert(mine);
    mine.capabilities.push("d");
    mine.health = "down";
    expect(registry.withCapability("d")).toEqual([]);
    expect(registry.byAddress("w#0")!.health).toBe("healthy");
  });

  test("an invalid subscription pattern is refused with code 2 and changes nothing", () => {
    const registry = new Registry();
    registry.upsert(entry("w", 0, { subscriptions: ["ok.#"] }));
    let heard = 0;
    registry.onUpdate(() => heard++);
    const error = (() => {
      try {
        registry.patch("w#0", { subscriptions: ["bad..x"] });
      } catch (e) {
        return e as { code: number };
      }
    })();
    expect(error?.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(registry.byAddress("w#0")!.subscriptions).toEqual(["ok.#"]);
    expect(registry.subscribersOf("ok.x")).toHaveLength(1);
    expect(heard).toBe(0);
  });

  test("a throwing listener does not stop the others", () => {
    const registry = new Registry();
    let second = 0;
    registry.onUpdate(() => {
      throw new Error("boom");
    });
    registry.onUpdate(() => second++);
    expect(() => registry.upsert(entry("w", 0))).toThrow("boom");
    expect(second).toBe(1);
    expect(registry.byAddress("w#0")).toBeDefined();
  });
});

describe("parseRegistryUpdate", () => {
  test("rejects malformed updates with code 2 naming the field", () => {
    for (const bad of [null, { type: "nope" }, { type: "patch", address: "a", changes: { health: "sleepy" } }, { type: "upsert", entry: { name: "x" } }]) {
      let caught: { code?: number; message?: string } = {};
      try {
        parseRegistryUpdate(bad);
      } catch (e) {
        caught = e as typeof caught;
      }
      expect(caught.code).toBe(ErrorCode.INVALID_REQUEST);
      expect(caught.message).toContain("malformed registry update");
    }
  });

  test("accepts every update type", () => {
    const e = entry("w", 0);
    expect(parseRegistryUpdate({ type: "snapshot", entries: [e] })).toEqual({ type: "snapshot", entries: [e] });
    expect(parseRegistryUpdate({ type: "upsert", entry: e })).toEqual({ type: "upsert", entry: e });
    expect(parseRegistryUpdate({ type: "patch", address: "w#0", changes: { inFlight: 1 } })).toEqual({ type: "patch", address: "w#0", changes: { inFlight: 1 } });
    expect(parseRegistryUpdate({ type: "remove", address: "w#0" })).toEqual({ type: "remove", address: "w#0" });
  });
});
