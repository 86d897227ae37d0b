/**
 * The format of docs/conformance/vectors.json (described for other implementations in
 * docs/protocol.md, "Conformance vectors").
 */

/** What a valid frame is. */
export type FrameType = "envelope" | "hello" | "ack" | "ping" | "pong";

/**
 * Where an invalid frame is refused: `framing` (the length prefix; the connection closes),
 * `decode` (the body is not exactly one MessagePack map), `hello`, `control` (ack/ping/pong
 * fields), `envelope` (docs/protocol.md §3), `payload` (a value inside the payload that cannot be
 * represented, §3 "payload values"), `connection` (rules of a live connection, such as `seq`).
 */
export type Stage = "framing" | "decode" | "hello" | "control" | "envelope" | "payload" | "connection";

interface VectorBase {
  name: string;
  description: string;
  kind: "frame";
  /** The whole frame, 4-byte length prefix included, as lowercase hex. */
  hex: string;
}

export interface ValidVector extends VectorBase {
  valid: true;
  frame_type: FrameType;
  /** The decoded map as JSON, with the gateway's JSON forms for values JSON lacks (docs/protocol.md §7). */
  decoded: Record<string, unknown>;
  /** A valid envelope that must nevertheless be answered with this error code (9: ttl expired). */
  expect_error_code?: number;
}

export interface InvalidVector extends VectorBase {
  valid: false;
  /** The protocol error code the receiver answers with. */
  error_code: number;
  reason: string;
  stage: Stage;
  /** True when `hex` holds only the start of the frame (the rest need never arrive). */
  partial_hex?: true;
}

export type Vector = ValidVector | InvalidVector;

export interface VectorFile {
  format: 1;
  protocol: 1;
  description: string;
  max_frame_bytes: number;
  vectors: Vector[];
}

export function hexToBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, "hex"));
}

export function bytesToHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}
