import { describe, expect, test } from "bun:test";
import { DedupeCache } from "../../mesh/dedupe-cache.ts";
import type { Envelope } from "../../mesh/envelope.ts";
import { newMessageId } from "../../mesh/ids.ts";
import { monotonicFactory, ulid } from "ulid";
import { seededRandom } from "../helpers.ts";

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

describe("DedupeCache keeps ULIDs as numbers", () => {
  test("an id is the exact string: the same ULID in lower case, and ids that are not ULIDs, are other ids", () => {
    const cache = new DedupeCache();
    const id = newMessageId();
    cache.begin(id);
    expect(cache.lookup(id)?.state).toBe("handling");
    // Compared as the string it is, as the mesh's other maps of message ids compare it.
    expect(cache.lookup(id.toLowerCase())).toBeUndefined();
    cache.begin(id.toLowerCase());
    expect(cache.size).toBe(2);
    cache.forget(id.toLowerCase());
    expect(cache.lookup(`${id.slice(0, 25)}${id[25] === "0" ? "1" : "0"}`)).toBeUndefined(); // another ULID
    cache.begin(`${id}-copy`);
    cache.begin(id.slice(0, 25)); // 25 characters: a name, not a ULID
    cache.forget(id);
    expect(cache.lookup(id)).toBeUndefined();
    expect(cache.lookup(`${id}-copy`)?.state).toBe("handling");
    expect(cache.lookup(id.slice(0, 25))?.state).toBe("handling");
    expect(cache.size).toBe(2);
  });

  test("ids that differ in one digit anywhere are different ids", () => {
    const cache = new DedupeCache();
    const id = newMessageId();
    cache.begin(id);
    for (let i = 0; i < 26; i++) {
      const other = id.slice(0, i) + (id[i] === "1" ? "2" : "1") + id.slice(i + 1);
      expect(cache.lookup(other)).toBeUndefined();
    }
  });

  test("random begins, completes, releases and forgets agree with a plain Map, through growth and compaction", () => {
    const next = seededRandom(0x2545f491);
    const capacity = 700;
    const maxAgeMs = 5_000;
    const cache = new DedupeCache({ capacity, maxAgeMs });
    // The model: a Map in insertion order, evicting from its start.
    const model = new Map<string, { state: "handling" | "done"; at: number; answer: boolean }>();
    // Ids from a pool, so ids come back after a forget or an eviction; some are not ULIDs, some in lower case.
    const pool = Array.from({ length: 2_000 }, (_, i) => (i % 10 === 9 ? `name-${i}` : i % 10 === 8 ? newMessageId().toLowerCase() : newMessageId()));
    let now = Date.now();
    const answer = (id: string): Envelope => ({
      message_id: newMessageId(), message_type: "response", trace_id: "t", source_agent: "a", target_agent: "b",
      correlation_id: id, timestamp: 1, ttl: 1, payload: { n: 1 },
    });
    // Half the time the same id as the operation before: a message is looked up, begun and
    // completed in a row, and the cache keeps the slot of the last id between them.
    let last = pool[0]!;
    for (let op = 0; op < 60_000; op++) {
      const id = next() < 0.5 ? last : pool[Math.floor(next() * pool.length)]!;
      last = id;
      const roll = next();
      if (roll < 0.5) {
        now += next() < 0.01 ? 2_000 : 1;
        cache.begin(id, now);
        model.delete(id);
        model.set(id, { state: "handling", at: now, answer: false });
        for (const [oldId, entry] of model) {
          if (model.size <= capacity && now - entry.at <= maxAgeMs) break;
          model.delete(oldId);
        }
      } else if (roll < 0.75) {
        const entry = model.get(id);
        if (!entry) continue; // completes of unseen ids use the clock; covered above
        const withAnswer = next() < 0.5;
        cache.complete(id, withAnswer ? answer(id) : undefined);
        entry.state = "done";
        if (withAnswer) entry.answer = true;
      } else if (roll < 0.9) {
        cache.releaseAnswer(id);
        const entry = model.get(id);
        if (entry) entry.answer = false;
      } else {
        cache.forget(id);
        model.delete(id);
      }
      if (op % 97 === 0) {
        expect(cache.size).toBe(model.size);
        for (let k = 0; k < 20; k++) {
          const probe = pool[Math.floor(next() * pool.length)]!;
          const expected = model.get(probe);
          const found = cache.lookup(probe);
          expect(found === undefined ? undefined : { state: found.state, at: found.at, answer: found.answer !== undefined }).toEqual(expected);
        }
      }
    }
    for (const id of pool) expect(cache.lookup(id)?.state).toBe(model.get(id)?.state);
    // Every kept answer has the same payload: the bytes kept are that many times one answer's.
    const kept = [...model.values()].filter((e) => e.answer).length;
    const one = new DedupeCache();
    one.complete(newMessageId(), answer("x"));
    expect(cache.answerBytes).toBe(kept * one.answerBytes);
  });

  test("many chunks: fresh ids, redeliveries, ids from lagging and running-ahead clocks, forgets and evictions agree with a plain Map", () => {
    // Past 4,096 ids the ring is cut into chunks with an index each; a fresh ULID skips all but the newest.
    const next = seededRandom(0x9e3779b9);
    const capacity = 10_000;
    const cache = new DedupeCache({ capacity, maxAgeMs: 60_000 });
    const model = new Map<string, "handling" | "done">();
    const start = Date.now();
    const senders = [monotonicFactory(), monotonicFactory(), monotonicFactory()];
    const history: string[] = [];
    let checked = 0;
    for (let op = 0; op < 120_000; op++) {
      const roll = next();
      let id: string;
      if (roll < 0.8) {
        // Fresh ids from three senders, a millisecond apart now and then; one of them 2 s behind, one 1 s ahead.
        const sender = Math.floor(next() * 3);
        id = senders[sender]!(start + Math.floor(op / 50) + (sender === 1 ? -2_000 : sender === 2 ? 1_000 : 0));
      } else if (roll < 0.85) {
        id = ulid(start - Math.floor(next() * 600_000)); // any time in the last ten minutes, random within it
      } else if (roll < 0.86) {
        id = `name-${op}`;
      } else {
        // A redelivery: an id seen before, maybe long evicted.
        id = history[Math.floor(next() * history.length)] ?? newMessageId();
      }
      const action = next();
      if (action < 0.1 && model.has(id)) {
        cache.forget(id);
        model.delete(id);
      } else if (action < 0.3 && model.has(id)) {
        cache.complete(id);
        model.set(id, "done");
      } else if (!model.has(id)) {
        cache.begin(id, 1_000);
        model.set(id, "handling");
        history.push(id);
        while (model.size > capacity) model.delete(model.keys().next().value!);
      }
      // Every seen id is looked up now and then; the ones just handled, often.
      const probe = next() < 0.5 ? id : history[Math.floor(next() * history.length)]!;
      expect(cache.lookup(probe)?.state).toBe(model.get(probe));
      checked++;
    }
    expect(cache.size).toBe(model.size);
    for (const id of history) expect(cache.lookup(id)?.state).toBe(model.get(id));
    expect(checked).toBe(120_000);
  });

  test("ids stamped far ahead of their arrival are remembered like any other, and completes of ids never begun keep the memory's bound", () => {
    // A ULID from a clock that runs ahead goes through the Map of other ids, not the chunks (where it
    // would widen their ranges); it must be found all the same, before and after the clock catches up.
    const cache = new DedupeCache({ capacity: 5_000 });
    const start = Date.now();
    const fresh = monotonicFactory();
    const ahead = monotonicFactory();
    const aheadIds: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const now = start + Math.floor(i / 10);
      cache.begin(fresh(now), now);
      if (i % 500 === 0) {
        const id = i % 1000 === 0 ? ahead(now + 30_000) : ulid(now + 600_000 + i); // 30 s ahead; far ahead
        cache.begin(id, now);
        aheadIds.push(id);
      }
    }
    // Still remembered while in the last 5,000 arrivals: the ones begun in the last 5,000 - 40 ids.
    const recent = aheadIds.slice(-9);
    for (const id of recent) expect(cache.lookup(id)?.state).toBe("handling");
    expect(cache.lookup(aheadIds[0]!)).toBeUndefined(); // evicted like the rest
    expect(cache.size).toBe(5_000);
    // Completes of ids never begun here (a handling that outlived its id's place) evict as begins do.
    for (let i = 0; i < 12_000; i++) cache.complete(`late-${i}`);
    expect(cache.size).toBe(5_000);
    expect(cache.lookup("late-11999")?.state).toBe("done");
    expect(cache.lookup("late-6999")).toBeUndefined();
  });
});
