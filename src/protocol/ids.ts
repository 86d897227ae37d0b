import { createHash } from "node:crypto";
import { monotonicFactory } from "ulid";

const nextUlid = monotonicFactory();

/**
 * A new message id: a ULID, strictly increasing within this process even inside one
 * millisecond, so ids sort in creation order.
 *
 * @example
 * const id = newMessageId(); // "01JD8X3M6Q6V5Q3J1Y0T1C2B3A"
 */
export function newMessageId(): string {
  return nextUlid();
}

const ULID_PATTERN = /^[0-9A-HJKMNP-TV-Z]{26}$/i;

/** True when `id` is a syntactically valid ULID (Crockford base32, 26 characters). */
export function isUlid(id: unknown): id is string {
  return typeof id === "string" && id.length === 26 && ULID_PATTERN.test(id);
}

/**
 * The stable id of an actor (PROTOCOL.md section 8): the first 16 bytes of
 * SHA-256("<service>-<env>-<hostname>") with the UUID version nibble set to 4 and the
 * variant bits to 10, printed as a UUID. Same across restarts, different across environments.
 *
 * @example
 * stableAgentId("db-query-service", "prod", "db-node-01"); // "c7e72067-cd67-428d-9e87-ba0f4ae25fb4"
 */
export function stableAgentId(service: string, env: string, hostname: string): string {
  const bytes = createHash("sha256").update(`${service}-${env}-${hostname}`, "utf8").digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
