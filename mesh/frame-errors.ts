import { parseEnvelope } from "../src/protocol/envelope-check.ts";
import type { Envelope } from "../src/protocol/envelope.ts";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";
import { newMessageId } from "../src/protocol/ids.ts";
import { MessageType } from "../src/protocol/message-types.ts";

/** Code 2 for a frame this side cannot accept, with the protocol's `reason` and `expected`. */
export function invalidFrame(reason: string, expected: unknown): HermesError {
  return new HermesError(ErrorCode.INVALID_REQUEST, reason, { reason, expected });
}

/** A short description of a decoded value that is not a map, for error reasons. */
export function describeValue(value: unknown): string {
  if (value === null) return "nil";
  if (Array.isArray(value)) return "an array";
  if (value instanceof Uint8Array) return "binary";
  return `a ${typeof value}`;
}

/** Why a decoded map is not an envelope, as the schema explains it (code 2 naming the field). */
export function envelopeRejection(value: unknown): HermesError {
  try {
    parseEnvelope(value);
    return invalidFrame("envelope rejected", "a Hermes envelope");
  } catch (error) {
    return HermesError.from(error, ErrorCode.INVALID_REQUEST);
  }
}

/**
 * The error envelope a connection sends about a frame: correlated with the frame's message_id
 * and addressed to its reply_to when it had them (`correlation_id: ""` when it had no id).
 */
export function connectionErrorEnvelope(value: any, error: HermesError, node: string, peerNode: string | undefined): Envelope {
  const correlation = typeof value?.message_id === "string" ? value.message_id : "";
  return {
    message_id: newMessageId(),
    message_type: MessageType.ERROR,
    trace_id: typeof value?.trace_id === "string" && value.trace_id ? value.trace_id : correlation || "connection",
    source_agent: node,
    target_agent: typeof value?.reply_to === "string" && value.reply_to ? value.reply_to : peerNode ?? "peer",
    correlation_id: correlation,
    timestamp: Date.now(),
    ttl: 60_000,
    payload: error.toPayload(),
  };
}

/** Code 6 for a peer that sent more unacknowledged envelopes than this side's window allows. */
export function windowExceeded(used: number, limit: number): HermesError {
  return new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "peer exceeded the credit window", { resource: "window", used, limit });
}
