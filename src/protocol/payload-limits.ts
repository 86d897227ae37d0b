/**
 * Bounds on what a payload may be: how deep it nests (checked on every send and receive) and
 * about how much memory it holds (for the byte budgets of remembered answers and links).
 */
import { ErrorCode } from "./error-codes.ts";
import { HermesError } from "./hermes-error.ts";

/** How deep a payload may nest maps and arrays: the payload map itself is level 1 (docs/protocol.md section 9). */
export const MAX_PAYLOAD_DEPTH = 512;

/**
 * Refuses a payload that nests maps and arrays deeper than `limit` levels (or refers to
 * itself), with code 2 naming where. Deep values crash recursive encoders and decoders and
 * every recursive reader after them, so they are stopped where they enter; the walk stops at
 * the limit, so it costs nothing like the payload's size for a flat one.
 *
 * @example
 * checkPayloadDepth({ a: { b: 1 } });        // fine
 * checkPayloadDepth(deeplyNested, 512);      // throws code 2: "payload.a.a.a… nests deeper than 512 levels"
 */
export function checkPayloadDepth(payload: unknown, limit = MAX_PAYLOAD_DEPTH): void {
  const path: string[] = [];
  if (!nestsBeyond(payload, limit, path)) return;
  const shown = path.reverse();
  const where = ["payload", ...shown.slice(0, 6)].join(".") + (shown.length > 6 ? "…" : "");
  const reason = `${where} nests deeper than ${limit} levels`;
  throw new HermesError(ErrorCode.INVALID_REQUEST, `payload refused: ${reason}`, {
    reason,
    expected: `at most ${limit} levels of maps and arrays (the payload map is level 1)`,
  });
}

function nestsBeyond(value: unknown, levelsLeft: number, path: string[]): boolean {
  if (typeof value !== "object" || value === null || ArrayBuffer.isView(value)) return false;
  if (levelsLeft === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (nestsBeyond(value[i], levelsLeft - 1, path)) return path.push(String(i)) > 0;
    }
    return false;
  }
  for (const key in value) {
    if (nestsBeyond((value as Record<string, unknown>)[key], levelsLeft - 1, path)) return path.push(key) > 0;
  }
  return false;
}

/**
 * About how many bytes a value takes on the wire: string lengths, binary lengths, 9 per number
 * and a few per container and key. For byte budgets, where being cheap matters more than being
 * exact; the walk stops at MAX_PAYLOAD_DEPTH.
 *
 * @example
 * approximateBytes({ text: "x".repeat(4 << 20) }); // about 4 MiB
 */
export function approximateBytes(value: unknown, levelsLeft = MAX_PAYLOAD_DEPTH): number {
  switch (typeof value) {
    case "string":
      return value.length + 5;
    case "number":
    case "bigint":
      return 9;
    case "object": {
      if (value === null) return 1;
      if (ArrayBuffer.isView(value)) return value.byteLength + 5;
      if (levelsLeft === 0) return 5;
      let total = 5;
      if (Array.isArray(value)) {
        for (const item of value) total += approximateBytes(item, levelsLeft - 1);
        return total;
      }
      for (const key in value) total += key.length + 1 + approximateBytes((value as Record<string, unknown>)[key], levelsLeft - 1);
      return total;
    }
    default:
      return 1;
  }
}
