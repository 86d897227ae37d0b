/**
 * The closed set of Hermes error codes (docs/protocol.md §6). Never extended: detail goes
 * into the error payload instead.
 */
export const ErrorCode = {
  SUCCESS: 0,
  UNKNOWN: 1,
  INVALID_REQUEST: 2,
  TASK_TIMEOUT: 3,
  TOOL_NOT_FOUND: 4,
  AUTH_FAILED: 5,
  RESOURCE_EXHAUSTED: 6,
  INTERNAL: 7,
  UNROUTABLE: 8,
  TTL_EXPIRED: 9,
  UNAVAILABLE: 10,
  RATE_LIMIT_EXCEEDED: 11,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];
export type ErrorName = keyof typeof ErrorCode;

const NAMES: Record<number, ErrorName> = Object.fromEntries(
  Object.entries(ErrorCode).map(([name, code]) => [code, name as ErrorName]),
);

/** The protocol name of a code, e.g. `errorName(8) === "UNROUTABLE"`. Unknown numbers map to UNKNOWN. */
export function errorName(code: number): ErrorName {
  return NAMES[code] ?? "UNKNOWN";
}

/** True when `code` is one of the twelve protocol codes. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "number" && NAMES[code] !== undefined;
}
