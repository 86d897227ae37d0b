import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";

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
