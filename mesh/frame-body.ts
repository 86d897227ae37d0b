import type { FrameCodec } from "../src/protocol/codec.ts";
import { CodecName } from "../src/protocol/control-frames.ts";
import { isPlainMap } from "../src/protocol/envelope-check.ts";
import { MAX_PAYLOAD_DEPTH } from "../src/protocol/payload-limits.ts";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";
import { describeValue } from "./frame-errors.ts";

/** A decoded frame body: the map, or why it is refused and whether the stream can go on. */
export type FrameBody = { map: Record<string, any> } | { error: HermesError; fatal: boolean };

/**
 * Decodes one frame body and checks it is a map (docs/protocol.md §1). Undecodable bytes are
 * fatal on a records stream, whose structure table is lost with them; on plain msgpack the
 * framing still holds and the connection goes on.
 */
export function decodeFrameBody(codec: FrameCodec, buffer: Uint8Array, start: number, end: number, handshaking: boolean): FrameBody {
  let value: unknown;
  try {
    value = codec.decode(buffer, start, end);
  } catch (error) {
    // A recursive decoder runs out of stack on values nested thousands deep.
    const tooDeep = error instanceof RangeError;
    return {
      error: new HermesError(ErrorCode.INVALID_REQUEST, tooDeep ? "frame body nests too deep to decode" : "frame body is not valid MessagePack", {
        reason: error instanceof Error ? error.message : String(error),
        expected: tooDeep ? `a MessagePack map whose payload nests at most ${MAX_PAYLOAD_DEPTH} levels` : "a MessagePack map",
      }),
      fatal: codec.name !== CodecName.MSGPACK,
    };
  }
  if (!isPlainMap(value)) {
    return {
      error: new HermesError(ErrorCode.INVALID_REQUEST, "frame body must be a map", { reason: `got ${describeValue(value)}`, expected: "a MessagePack map" }),
      fatal: handshaking,
    };
  }
  return { map: value };
}
