/** The message of every transport scenario: 128 bytes of payload. */

/** A payload map whose MessagePack encoding is exactly 128 bytes: fixmap(1), "data", str8(120). */
export const PAYLOAD_128: Record<string, unknown> = { data: "x".repeat(120) };

/** 128 raw bytes for the no-codec baselines. */
export const RAW_128: Uint8Array = new Uint8Array(128).fill(0x78);
