import { describe, expect, test } from "bun:test";
import { sampleRequest } from "./sample-envelope.ts";
import { isPlainMap, isValidEnvelope, parseEnvelope } from "../../mesh/envelope.ts";
import { HermesError } from "../../mesh/errors.ts";

const base = sampleRequest();

describe("isValidEnvelope", () => {
  test("accepts a valid envelope and rejects non-maps", () => {
    expect(isValidEnvelope(base)).toBe(true);
    for (const value of [null, undefined, [], "x", 5, new Uint8Array(4)]) expect(isValidEnvelope(value)).toBe(false);
  });

  test("rejects integers beyond 2^53, as the schema does", () => {
    for (const field of ["timestamp", "ttl", "seq", "attempt"]) {
      expect(isValidEnvelope({ ...base, [field]: 2 ** 53 })).toBe(false);
      expect(isValidEnvelope({ ...base, [field]: 1e300 })).toBe(false);
      expect(isValidEnvelope({ ...base, [field]: 2n })).toBe(false);
    }
    expect(isValidEnvelope({ ...base, ttl: 2 ** 53 - 1 })).toBe(true);
  });

  test("allows an empty correlation_id (connection-level errors about unreadable frames)", () => {
    expect(isValidEnvelope({ ...base, message_type: "error", correlation_id: "" })).toBe(true);
    expect(isValidEnvelope({ ...base, trace_id: "" })).toBe(false);
  });
});

describe("parseEnvelope", () => {
  test("returns a valid envelope as it is", () => {
    const value = { ...base, extra: 1 };
    expect(parseEnvelope(value) as unknown).toBe(value);
  });

  test("throws code 2 naming the first failing field", () => {
    const cases: Array<[unknown, string]> = [
      [{ ...base, message_id: "nope" }, "message_id"],
      [{ ...base, payload: [1] }, "payload"],
      [{ ...base, priority: 10 }, "priority"],
      [[], "(envelope)"],
    ];
    for (const [value, field] of cases) {
      let error: unknown;
      try {
        parseEnvelope(value);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(HermesError);
      expect((error as HermesError).code).toBe(2);
      expect(String((error as HermesError).fields.reason)).toStartWith(`${field}:`);
      expect((error as HermesError).fields.expected).toContain("docs/protocol.md §3");
    }
  });
});

describe("isPlainMap", () => {
  test("is true only for plain objects", () => {
    expect(isPlainMap({})).toBe(true);
    expect(isPlainMap(Object.create(null))).toBe(true);
    for (const value of [null, [], new Date(), new Uint8Array(1), new Map(), "x", 1, class {}]) expect(isPlainMap(value)).toBe(false);
  });
});
