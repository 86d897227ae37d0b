import { describe, expect, test } from "bun:test";
import { childTraceparent, formatTraceparent, parentSpanOf, parseTraceparent, spanIdOf, traceHexOf } from "../../src/observability/trace-context.ts";
import { newMessageId } from "../../mesh/ids.ts";

describe("trace context", () => {
  test("span ids are 16 hex digits, stable per message id, different across ids", () => {
    const a = newMessageId();
    const b = newMessageId();
    expect(spanIdOf(a)).toMatch(/^[0-9a-f]{16}$/);
    expect(spanIdOf(a)).toBe(spanIdOf(a));
    expect(spanIdOf(a)).not.toBe(spanIdOf(b));
    expect(spanIdOf("not-a-ulid")).toMatch(/^[0-9a-f]{16}$/);
  });

  test("any trace_id maps to a valid W3C trace id; a 32-hex one is kept", () => {
    expect(traceHexOf("4bf92f3577b34da6a3ce929d0e0e4736")).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(traceHexOf("t7u8v9")).toMatch(/^[0-9a-f]{32}$/);
    expect(traceHexOf("t7u8v9")).toBe(traceHexOf("t7u8v9"));
    expect(traceHexOf("0".repeat(32))).not.toBe("0".repeat(32)); // all-zero is invalid in W3C
    // The first 32 hex digits of SHA-256(trace_id): every member, on any runtime, names the trace alike.
    expect(traceHexOf("t7u8v9")).toBe("1638478bd91ff75133f5b20ac00fa274");
    expect(traceHexOf("01M8ZGT7CYMWWKNVWJTZCDC2FQ")).toBe(new Bun.CryptoHasher("sha256").update("01M8ZGT7CYMWWKNVWJTZCDC2FQ").digest("hex").slice(0, 32));
  });

  test("traceparent parsing accepts valid headers only", () => {
    const header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    expect(parseTraceparent(header)).toEqual({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", parentSpanId: "00f067aa0ba902b7" });
    for (const bad of [undefined, "", "00-xyz-00f067aa0ba902b7-01", `00-${"0".repeat(32)}-00f067aa0ba902b7-01`, "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
    expect(formatTraceparent("t7u8v9", "00f067aa0ba902b7")).toMatch(/^00-[0-9a-f]{32}-00f067aa0ba902b7-01$/);
    expect(parentSpanOf({ traceparent: header })).toBe("00f067aa0ba902b7");
  });

  test("a message sent while handling keeps the W3C trace that came in and names the handler's span", () => {
    const incoming = { message_id: newMessageId(), trace_id: "t7u8v9", headers: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" } };
    expect(childTraceparent(incoming)).toBe(`00-4bf92f3577b34da6a3ce929d0e0e4736-${spanIdOf(incoming.message_id)}-01`);
    const fresh = { message_id: newMessageId(), trace_id: "t7u8v9" };
    expect(childTraceparent(fresh)).toBe(`00-${traceHexOf("t7u8v9")}-${spanIdOf(fresh.message_id)}-01`);
  });
});
