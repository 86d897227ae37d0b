import { z } from "zod";
import { EnvelopeSchema, type Envelope } from "./envelope.ts";
import { ErrorCode } from "./error-codes.ts";
import { HermesError } from "./hermes-error.ts";

const TYPES = new Set(["request", "response", "event", "error", "progress", "cancel"]);
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/i;

/**
 * The hot-path check: the same rules as {@link EnvelopeSchema}, written out so that a
 * million envelopes a second can be checked without building zod issue lists. The schema
 * stays the source of truth; a test runs both over the conformance vectors and random
 * envelopes and requires them to agree. Only when this says no does zod run, to explain why.
 */
export function isValidEnvelope(v: any): v is Envelope {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const id = v.message_id;
  if (typeof id !== "string" || id.length !== 26 || !ULID.test(id)) return false;
  const type = v.message_type;
  if (typeof type !== "string" || !TYPES.has(type)) return false;
  if (!nonEmpty(v.trace_id) || !nonEmpty(v.source_agent)) return false;
  const { target_agent, topic, capability } = v;
  if (target_agent === undefined && topic === undefined && capability === undefined) return false;
  if (!optionalNonEmpty(target_agent) || !optionalNonEmpty(topic) || !optionalNonEmpty(capability)) return false;
  if (!optionalNonEmpty(v.reply_to)) return false;
  if (type === "request" && v.reply_to === undefined) return false;
  const corr = v.correlation_id;
  if (corr !== undefined && typeof corr !== "string") return false;
  if (corr === undefined && type !== "request" && type !== "event") return false;
  if (v.context_id !== undefined && typeof v.context_id !== "string") return false;
  // Safe integers only, as zod's `.int()`: 2^53 and beyond cannot be told apart from their neighbours.
  const p = v.priority;
  if (p !== undefined && !(Number.isSafeInteger(p) && p >= 0 && p <= 9)) return false;
  if (!(Number.isSafeInteger(v.timestamp) && v.timestamp >= 0)) return false;
  if (!Number.isSafeInteger(v.ttl)) return false;
  if (v.attempt !== undefined && !(Number.isSafeInteger(v.attempt) && v.attempt >= 1)) return false;
  if (v.seq !== undefined && !(Number.isSafeInteger(v.seq) && v.seq >= 1)) return false;
  if (v.headers !== undefined && !isStringMap(v.headers)) return false;
  return isPlainMap(v.payload);
}

/**
 * Checks a decoded frame and returns it as an envelope, or throws HermesError code 2 with
 * the first failing field as `reason` and the schema's expectation as `expected`.
 */
export function parseEnvelope(value: unknown): Envelope {
  if (isValidEnvelope(value)) return value;
  const result = EnvelopeSchema.safeParse(value);
  if (result.success) return result.data;
  throw invalidEnvelopeError(result.error);
}

/** HermesError code 2 describing why a value is not an envelope. */
export function invalidEnvelopeError(error: z.ZodError): HermesError {
  const issue = error.issues[0]!;
  const path = issue.path.length > 0 ? issue.path.join(".") : "(envelope)";
  const reason = `${path}: ${issue.message}`;
  return new HermesError(ErrorCode.INVALID_REQUEST, `invalid envelope: ${reason}`, {
    reason,
    expected: "a Hermes envelope map (docs/protocol.md §3)",
  });
}

/** True for a plain map (msgpack map / JSON object): not null, not an array, not a binary or date. */
export function isPlainMap(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function nonEmpty(v: unknown): boolean {
  return typeof v === "string" && v.length > 0;
}

function optionalNonEmpty(v: unknown): boolean {
  return v === undefined || (typeof v === "string" && v.length > 0);
}

function isStringMap(v: unknown): boolean {
  if (!isPlainMap(v)) return false;
  for (const key in v) if (typeof (v as Record<string, unknown>)[key] !== "string") return false;
  return true;
}

