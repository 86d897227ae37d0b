import { describe, expect, test } from "bun:test";
import { ErrorCode, errorName, isErrorCode } from "../../mesh/errors.ts";

// The closed set of docs/protocol.md §6, in order.
const PROTOCOL_TABLE = [
  "SUCCESS", "UNKNOWN", "INVALID_REQUEST", "TASK_TIMEOUT", "TOOL_NOT_FOUND", "AUTH_FAILED",
  "RESOURCE_EXHAUSTED", "INTERNAL", "UNROUTABLE", "TTL_EXPIRED", "UNAVAILABLE", "RATE_LIMIT_EXCEEDED",
];

describe("ErrorCode", () => {
  test("has exactly the twelve protocol codes, numbered 0..11 with the protocol's names", () => {
    expect(Object.keys(ErrorCode)).toHaveLength(12);
    expect(Object.entries(ErrorCode) as unknown).toEqual(PROTOCOL_TABLE.map((name, code) => [name, code]));
  });

  test("errorName maps every code back to its name and anything else to UNKNOWN", () => {
    PROTOCOL_TABLE.forEach((name, code) => expect(errorName(code)).toBe(name as never));
    expect(errorName(8)).toBe("UNROUTABLE");
    expect(errorName(12)).toBe("UNKNOWN");
    expect(errorName(-1)).toBe("UNKNOWN");
    expect(errorName(2.5)).toBe("UNKNOWN");
  });

  test("isErrorCode accepts only the twelve numbers", () => {
    for (let code = 0; code < 12; code++) expect(isErrorCode(code)).toBe(true);
    for (const other of [12, -1, 2.5, "2", null, undefined, NaN, 2n]) expect(isErrorCode(other)).toBe(false);
  });
});
