/**
 * The 128-byte payload as a string, for the peers whose channel carries strings best: an IPC
 * channel with JSON serialization (a Uint8Array becomes a 128-key object there) and Redis
 * stream fields. 128 ASCII characters: 128 bytes as UTF-8, as RAW_128 is.
 */
export const TEXT_128 = "x".repeat(128);

/** IPC channels with JSON serialization write one line of JSON per message. */
export function jsonLineBytes(message: unknown): number {
  return Buffer.byteLength(JSON.stringify(message)) + 1;
}
