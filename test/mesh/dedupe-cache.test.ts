import { describe, expect, test } from "bun:test";
import { DedupeCache } from "../../mesh/dedupe-cache.ts";

describe("DedupeCache eviction", () => {
  test("keeps the last `capacity` ids, evicting the oldest first", () => {
    const cache = new DedupeCache({ capacity: 3 });
    for (const id of ["a", "b", "c", "d", "e"]) cache.begin(id, 1000);
    expect(cache.size).toBe(3);
    expect(cache.lookup("a")).toBeUndefined();
    expect(cache.lookup("b")).toBeUndefined();
    expect(["c", "d", "e"].map((id) => cache.lookup(id)?.state)).toEqual(["handling", "handling", "handling"]);
  });

  test("an id forgotten and seen again counts from its new place, not its old one", () => {
    const cache = new DedupeCache({ capacity: 3 });
    cache.begin("a", 1000);
    cache.begin("b", 1000);
    cache.forget("a");
    cache.begin("c", 1000);
    cache.begin("a", 1000); // seen again: now the newest
    cache.begin("d", 1000); // evicts b, the oldest still remembered
    expect(cache.lookup("b")).toBeUndefined();
    expect(cache.lookup("a")?.state).toBe("handling");
    expect(cache.size).toBe(3);
  });

  test("entries older than maxAgeMs go on the next begin", () => {
    const cache = new DedupeCache({ capacity: 100, maxAgeMs: 50 });
    cache.begin("old", 1000);
    cache.begin("new", 1100);
    expect(cache.lookup("old")).toBeUndefined();
    expect(cache.lookup("new")).toBeDefined();
  });

  test("many forgets keep the order bounded and eviction correct", () => {
    const cache = new DedupeCache({ capacity: 10 });
    for (let i = 0; i < 5000; i++) {
      cache.begin(`x${i}`, 1000);
      if (i % 2 === 0) cache.forget(`x${i}`);
    }
    // The 10 newest odd ids remain.
    expect(cache.size).toBe(10);
    for (let i = 4999; i > 4979; i -= 2) expect(cache.lookup(`x${i}`)?.state).toBe("handling");
    expect(cache.lookup("x4979")).toBeUndefined();
  });

  test("a million ids at capacity stay cheap per id (no walk over evicted slots)", () => {
    const cache = new DedupeCache({ capacity: 100_000 });
    for (let i = 0; i < 1_000_000; i++) {
      cache.begin(String(i), 1000);
      cache.complete(String(i));
    }
    expect(cache.size).toBe(100_000);
    expect(cache.lookup("899999")).toBeUndefined();
    expect(cache.lookup("900000")?.state).toBe("done");
  });
});
