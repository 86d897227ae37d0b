import { describe, expect, test } from "bun:test";
import { createCancel, createErrorReply, createEvent, createReply, createRequest, isValidEnvelope } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { isUlid } from "../../mesh/ids.ts";

describe("envelope factory", () => {
  const request = createRequest("cli", { target_agent: "echo" }, { text: "hi" }, { ttl: 5000, priority: 7, context_id: "c-1", headers: { traceparent: "00-x" } });

  test("a request is valid, starts its own trace and replies to its source", () => {
    expect(isValidEnvelope(request)).toBe(true);
    expect(isUlid(request.message_id)).toBe(true);
    expect(request.trace_id).toBe(request.message_id);
    expect(request).toMatchObject({ message_type: "request", reply_to: "cli", ttl: 5000, priority: 7, context_id: "c-1", headers: { traceparent: "00-x" } });
    expect(createRequest("cli", { topic: "a.b" }, {}).ttl).toBe(60_000);
    expect(createRequest("cli", { topic: "a.b" }, {}, { trace_id: "t" }).trace_id).toBe("t");
  });

  test("replies keep trace and context, go to reply_to and correlate by message_id", () => {
    for (const type of ["response", "progress", "error"] as const) {
      const reply = createReply(type, request, "echo", { ok: true });
      expect(isValidEnvelope(reply)).toBe(true);
      expect(reply).toMatchObject({ message_type: type, trace_id: request.trace_id, context_id: "c-1", target_agent: "cli", correlation_id: request.message_id, source_agent: "echo" });
      expect(reply.message_id).not.toBe(request.message_id);
    }
  });

  test("an error reply carries the coded payload that fromWire reads back", () => {
    const reply = createErrorReply(request, "echo", new HermesError(ErrorCode.TTL_EXPIRED, "late", { ttl: 0 }));
    expect(reply.payload).toEqual({ ttl: 0, error_code: 9, error_name: "TTL_EXPIRED", detail: "late" });
    expect(HermesError.fromWire(reply).code).toBe(9);
  });

  test("events and cancels are valid envelopes", () => {
    const event = createEvent("img", { topic: "task.image.done" }, { url: "x" });
    expect(isValidEnvelope(event)).toBe(true);
    expect("reply_to" in event).toBe(false);
    const cancel = createCancel(request);
    expect(isValidEnvelope(cancel)).toBe(true);
    expect(cancel).toMatchObject({ message_type: "cancel", correlation_id: request.message_id, target_agent: "echo", trace_id: request.trace_id });
  });
});
