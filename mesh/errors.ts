
/**
 * The closed set of Hermes error codes (docs/protocol.md §6). Never extended: detail goes
 * into the error payload instead.
 *
 * @example
 * throw new HermesError(ErrorCode.INVALID_REQUEST, "expression is missing", { field: "expression" });
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

const BRAND = Symbol.for("hermes-mesh.HermesError");

/** Actionable fields an error payload may carry (docs/protocol.md §6), plus anything else useful. */
export type ErrorFields = Record<string, unknown>;

/** The payload of an `error` envelope. */
export interface ErrorPayload extends ErrorFields {
  error_code: ErrorCode;
  error_name: ErrorName;
  detail: string;
}

/**
 * The one error class of hermes-mesh. `code` is always one of the protocol's twelve codes;
 * `fields` carries the actionable detail (`reason`, `known`, `retry_after_ms`, ...).
 *
 * @example
 * throw new HermesError(ErrorCode.UNROUTABLE, "no actor named 'ocr'", { target: "ocr", known: ["echo"] });
 */
export class HermesError extends Error {
  readonly code: ErrorCode;
  readonly fields: ErrorFields;
  /** Marks every HermesError, whichever copy of this module made it (see Symbol.hasInstance). */
  readonly [BRAND] = true;

  /**
   * `instanceof HermesError` by brand, not by prototype: an actor module loads this file from
   * source while the actor host runs bundled, so two copies of the class meet in one process,
   * and an error thrown by the module must keep its code.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && BRAND in value;
  }

  constructor(code: ErrorCode, detail: string, fields: ErrorFields = {}, options?: { cause?: unknown }) {
    super(detail, options);
    this.name = "HermesError";
    this.code = code;
    this.fields = fields;
  }

  /** The protocol name of the code, e.g. "TTL_EXPIRED". */
  get codeName(): ErrorName {
    return errorName(this.code);
  }

  /** The error as an `error` envelope payload. Never includes a stack: it may go to foreign peers. */
  toPayload(): ErrorPayload {
    return { ...this.fields, error_code: this.code, error_name: errorName(this.code), detail: this.message };
  }

  /**
   * Rebuilds an error from an error payload or from a whole error envelope. Anything that is
   * not a recognisable error payload becomes code 1 (UNKNOWN) rather than throwing.
   *
   * @example
   * const err = HermesError.fromWire(envelope); // envelope.payload.error_code === 9
   * err.code === ErrorCode.TTL_EXPIRED;
   */
  static fromWire(wire: unknown): HermesError {
    const payload = isRecord(wire) && isRecord(wire.payload) ? wire.payload : wire;
    if (!isRecord(payload)) return new HermesError(ErrorCode.UNKNOWN, "malformed error payload");
    const { error_code, error_name: _name, detail, ...fields } = payload;
    const code = isErrorCode(error_code) ? error_code : ErrorCode.UNKNOWN;
    return new HermesError(code, typeof detail === "string" ? detail : errorName(code), fields);
  }

  /** Wraps anything thrown into a HermesError, keeping HermesErrors as they are. */
  static from(error: unknown, code: ErrorCode = ErrorCode.INTERNAL): HermesError {
    if (error instanceof HermesError) return error;
    const detail = error instanceof Error ? error.message : String(error);
    return new HermesError(code, detail, {}, { cause: error });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
