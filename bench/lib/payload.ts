/** The messages of the transport scenarios: 128 bytes of payload, and the sizes the hop scenario sweeps. */

/** A payload map whose MessagePack encoding is exactly 128 bytes: fixmap(1), "data", str8(120). */
export const PAYLOAD_128: Record<string, unknown> = { data: "x".repeat(120) };

/** 128 raw bytes for the no-codec baselines. */
export const RAW_128: Uint8Array = new Uint8Array(128).fill(0x78);

/** Payload sizes of the hop scenario's sweep, in bytes (128, the default, is measured too). */
export const PAYLOAD_SIZES = [64, 128, 1024, 16_384, 262_144] as const;

/**
 * A payload map whose MessagePack encoding is exactly `bytes` long (at least 40; msgpackr,
 * which writes every map with a map16 header, makes it 2 bytes more): fixmap(1) + fixstr
 * "data" (5 bytes) + a str8 / str16 / str32 header + that many "x".
 *
 * @example
 * payloadOf(128); // { data: "x".repeat(120) }, as PAYLOAD_128
 */
export function payloadOf(bytes: number): Record<string, unknown> {
  if (bytes === 128) return PAYLOAD_128;
  const rest = bytes - 6;
  const header = rest - 2 < 256 ? 2 : rest - 3 < 65_536 ? 3 : 5;
  if (bytes < 40) throw new RangeError(`payloadOf: ${bytes} bytes is below the 40-byte minimum`);
  return { data: "x".repeat(rest - header) };
}

/** `bytes` raw bytes for the no-codec baselines. */
export function rawOf(bytes: number): Uint8Array {
  return bytes === 128 ? RAW_128 : new Uint8Array(bytes).fill(0x78);
}

/** "64 B", "1 KiB", "256 KiB". */
export function sizeLabel(bytes: number): string {
  return bytes >= 1024 && bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} B`;
}
