import { describe, expect, test } from "bun:test";
import { sampleRequest } from "./sample-envelope.ts";
import { DEFAULT_PRIORITY, DEFAULT_TTL_MS, EnvelopeSchema, PayloadSchema } from "../../mesh/envelope.ts";

const { seq: _seq, ...base } = sampleRequest({ payload: {} });

const issuePaths = (value: unknown) => {
  const result = EnvelopeSchema.safeParse(value);
  return result.success ? [] : result.error.issues.map((i) => i.path.join("."));
};

describe("EnvelopeSchema", () => {
  test("accepts a minimal request and keeps unknown fields", () => {
    const parsed: unknown = EnvelopeSchema.parse({ ...base, x_future: { a: 1 } });
    expect(parsed).toEqual({ ...base, x_future: { a: 1 } });
  });

  test("needs one of target_agent, topic or capability", () => {
    const { target_agent: _t, ...noRoute } = base;
    expect(issuePaths(noRoute)).toEqual(["target_agent"]);
    for (const route of [{ topic: "a.b" }, { capability: "ocr" }]) expect(EnvelopeSchema.safeParse({ ...noRoute, ...route }).success).toBe(true);
  });

  test("needs reply_to on a request and correlation_id on response, error, progress and cancel", () => {
    const { reply_to: _r, ...noReply } = base;
    expect(issuePaths(noReply)).toEqual(["reply_to"]);
    expect(EnvelopeSchema.safeParse({ ...noReply, message_type: "event" }).success).toBe(true);
    for (const type of ["response", "error", "progress", "cancel"]) {
      expect(issuePaths({ ...base, message_type: type })).toEqual(["correlation_id"]);
      expect(EnvelopeSchema.safeParse({ ...base, message_type: type, correlation_id: base.message_id }).success).toBe(true);
    }
  });

  test("bounds priority to 0..9, attempt and seq from 1, timestamp from 0; ints must be safe", () => {
    for (const [field, ok, bad] of [["priority", [0, 9], [10, -1, 1.5]], ["attempt", [1], [0]], ["seq", [1], [0]], ["timestamp", [0], [-1]], ["ttl", [0, -5], [0.5, 2 ** 53]]] as const) {
      for (const v of ok) expect(EnvelopeSchema.safeParse({ ...base, [field]: v }).success).toBe(true);
      for (const v of bad) expect(issuePaths({ ...base, [field]: v })).toEqual([field]);
    }
  });

  test("payload must be a map; headers a map of strings", () => {
    for (const payload of [[], "x", null, 5, new Uint8Array(1), new Date()]) expect(issuePaths({ ...base, payload })).toEqual(["payload"]);
    expect(PayloadSchema.safeParse({ a: [1], b: null }).success).toBe(true);
    expect(EnvelopeSchema.safeParse({ ...base, headers: { traceparent: "00-x" } }).success).toBe(true);
    expect(issuePaths({ ...base, headers: { n: 1 } })[0]).toStartWith("headers");
  });

  test("defaults match the protocol", () => {
    expect(DEFAULT_TTL_MS).toBe(60_000);
    expect(DEFAULT_PRIORITY).toBe(5);
  });
});
