import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import { createHash } from "node:crypto";
import { decodeTime } from "ulid";
import { createReply, createRequest, MessageType } from "../../mesh/envelope.ts";
import { isUlid, newMessageId, stableAgentId } from "../../mesh/ids.ts";

describe("stableAgentId", () => {
  test("matches the known id from docs/protocol.md §8", () => {
    expect(stableAgentId("db-query-service", "prod", "db-node-01")).toBe("c7e72067-cd67-428d-9e87-ba0f4ae25fb4");
  });

  test("is a UUID with version nibble 4 and variant bits 10", () => {
    for (const [service, env, host] of [["a", "b", "c"], ["ocr", "staging", "node-7"], ["服务", "prod", "主机"]]) {
      const id = stableAgentId(service!, env!, host!);
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
  });

  test("is the first 16 bytes of SHA-256 with only the version and variant bits changed", () => {
    const digest = createHash("sha256").update("ocr-staging-node-7").digest();
    const hex = stableAgentId("ocr", "staging", "node-7").replaceAll("-", "");
    const bytes = Buffer.from(hex, "hex");
    bytes.forEach((b, i) => {
      const mask = i === 6 ? 0x0f : i === 8 ? 0x3f : 0xff;
      expect(b & mask).toBe(digest[i]! & mask);
    });
  });

  test("is stable across calls and differs across environments", () => {
    expect(stableAgentId("svc", "prod", "h1")).toBe(stableAgentId("svc", "prod", "h1"));
    expect(stableAgentId("svc", "prod", "h1")).not.toBe(stableAgentId("svc", "dev", "h1"));
  });
});

describe("newMessageId", () => {
  afterEach(() => setSystemTime());

  test("gives ULIDs that strictly increase across 10,000 calls in one millisecond", () => {
    // A frozen clock far ahead of real time guarantees every id shares one millisecond.
    setSystemTime(new Date("2040-01-01T00:00:00.000Z"));
    const ids = Array.from({ length: 10_000 }, () => newMessageId());
    expect(new Set(ids.map((id) => id.slice(0, 10))).size).toBe(1);
    for (let i = 1; i < ids.length; i++) {
      if (!(ids[i]! > ids[i - 1]!)) throw new Error(`id ${i} (${ids[i]}) is not above ${ids[i - 1]}`);
    }
    expect(ids.every(isUlid)).toBe(true);
  });

  test("keeps increasing past a million ids in one millisecond (the counter carries)", () => {
    setSystemTime(new Date("2041-01-01T00:00:00.000Z"));
    let previous = newMessageId();
    for (let i = 0; i < 1_100_000; i++) {
      const id = newMessageId();
      if (!(id > previous)) throw new Error(`id ${id} is not above ${previous}`);
      previous = id;
    }
  });

  test("encodes the current time as the ulid package decodes it, and the clock stepping back keeps the order", () => {
    setSystemTime(new Date("2042-03-04T05:06:07.089Z"));
    const first = newMessageId();
    expect(decodeTime(first)).toBe(Date.parse("2042-03-04T05:06:07.089Z"));
    setSystemTime(new Date("2042-03-04T05:06:00.000Z"));
    expect(newMessageId() > first).toBe(true);
  });

  test("made at a given time, an id carries that time, and an envelope's timestamp is its id's time", () => {
    const at = Date.parse("2043-05-06T07:08:09.010Z");
    expect(decodeTime(newMessageId(at))).toBe(at);
    const earlier = newMessageId(at + 1);
    expect(newMessageId(at) > earlier).toBe(true); // a time before the last id's: still in order
    setSystemTime(new Date("2044-01-01T00:00:00.123Z"));
    const request = createRequest("tester", { target_agent: "peer" }, {});
    const reply = createReply(MessageType.RESPONSE, request, "peer", {});
    for (const env of [request, reply]) expect(decodeTime(env.message_id)).toBe(env.timestamp);
    expect(request.timestamp).toBe(Date.parse("2044-01-01T00:00:00.123Z"));
  });
});

describe("isUlid", () => {
  test("accepts 26 Crockford base32 characters in either case and nothing else", () => {
    expect(isUlid("01ARZ3NDEKTSV4RRFFQ69G5FAV")).toBe(true);
    expect(isUlid("01arz3ndektsv4rrffq69g5fav")).toBe(true);
    for (const bad of ["01ARZ3NDEKTSV4RRFFQ69G5FAU", "01ARZ3NDEKTSV4RRFFQ69G5FA", "01ARZ3NDEKTSV4RRFFQ69G5FAVV", "", 5, null]) {
      expect(isUlid(bad)).toBe(false);
    }
  });
});
