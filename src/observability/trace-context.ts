import { createHash } from "node:crypto";

/**
 * W3C trace context (`traceparent: 00-<trace-id>-<parent-id>-<flags>`) for Hermes envelopes.
 * Every handled envelope is a span; its span id is derived from its message_id, so nothing
 * extra needs to travel to name it. An envelope's `headers.traceparent` names the span that
 * caused it (the handler that sent it); the trace id is the envelope's `trace_id` when that is
 * already 32 hex digits, else a hash of it, so any trace_id maps to a valid W3C trace.
 */

const HEX32 = /^[0-9a-f]{32}$/;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** The 16-hex-digit span id of the span handling `messageId` (a ULID: its last 16 base32 digits are random). */
export function spanIdOf(messageId: string): string {
  // 13 base32 digits = 65 bits; the low 64 as hex. Non-ULID ids are hashed instead.
  if (messageId.length === 26) {
    let value = 0n;
    for (const char of messageId.slice(13).toUpperCase()) {
      const digit = CROCKFORD.indexOf(char);
      if (digit < 0) return hashHex(messageId, 16);
      value = (value << 5n) | BigInt(digit);
    }
    const hex = (value & 0xffff_ffff_ffff_ffffn).toString(16).padStart(16, "0");
    return hex === "0000000000000000" ? hashHex(messageId, 16) : hex;
  }
  return hashHex(messageId, 16);
}

/** The W3C trace id (32 hex) of a Hermes trace_id. */
export function traceHexOf(traceId: string): string {
  const lower = traceId.toLowerCase();
  return HEX32.test(lower) && lower !== "0".repeat(32) ? lower : hashHex(traceId, 32);
}

/** `00-<trace>-<parent span>-01`, the trace given as a Hermes trace_id or already as 32 hex. */
export function formatTraceparent(traceId: string, parentSpanId: string): string {
  return `00-${traceHexOf(traceId)}-${parentSpanId}-01`;
}

/**
 * The traceparent for messages sent while handling `envelope`: its W3C trace (kept from its own
 * traceparent, so a trace that entered over HTTP keeps the caller's trace id) and its span as parent.
 */
export function childTraceparent(envelope: { message_id: string; trace_id: string; headers?: Record<string, string> }): string {
  const trace = parseTraceparent(envelope.headers?.traceparent)?.traceId ?? traceHexOf(envelope.trace_id);
  return `00-${trace}-${spanIdOf(envelope.message_id)}-01`;
}

/** The trace and parent span of a `traceparent` header, or undefined when it is not valid W3C. */
export function parseTraceparent(header: string | null | undefined): { traceId: string; parentSpanId: string } | undefined {
  const match = header ? TRACEPARENT.exec(header.trim().toLowerCase()) : null;
  if (!match || match[1] === "0".repeat(32) || match[2] === "0".repeat(16)) return undefined;
  return { traceId: match[1]!, parentSpanId: match[2]! };
}

/** The parent span named by an envelope's headers, if any. */
export function parentSpanOf(headers: Record<string, string> | undefined): string | undefined {
  return parseTraceparent(headers?.traceparent)?.parentSpanId;
}

function hashHex(text: string, digits: number): string {
  return createHash("sha256").update(text).digest("hex").slice(0, digits);
}
