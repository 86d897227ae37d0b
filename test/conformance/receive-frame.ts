import { checkPayload, FrameDecoder } from "../../mesh/frames.ts";
import { createPlainCodec } from "../../mesh/codecs.ts";
import { AckSchema, HelloSchema, PingSchema, PongSchema, PROTOCOL_VERSION } from "../../mesh/handshake.ts";
import { isPlainMap, parseEnvelope, arrivedExpired } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { FrameType, Stage } from "./vector-format.ts";

export type Outcome =
  | { ok: true; frameType: FrameType; value: Record<string, unknown>; answerCode?: number }
  | { ok: false; stage: Stage; error: HermesError };

const CONTROL = { ack: AckSchema, ping: PingSchema, pong: PongSchema } as const;

/**
 * One frame through the receive path of mesh/connection.ts, built from the same mesh/
 * parts: framing, plain codec, map check, hello or control schema, envelope check, payload
 * values, seq, ttl.
 * Returns undefined when the bytes hold no complete frame and no error.
 */
export function receiveFrame(bytes: Uint8Array): Outcome | undefined {
  const decoder = new FrameDecoder();
  const bodies: Uint8Array[] = [];
  try {
    decoder.push(bytes, (buf, s, e) => bodies.push(buf.slice(s, e)));
  } catch (error) {
    return { ok: false, stage: "framing", error: HermesError.from(error) };
  }
  if (bodies.length !== 1 || decoder.bufferedBytes !== 0) return undefined;
  let value: unknown;
  try {
    value = createPlainCodec().decode(bodies[0]!);
  } catch (error) {
    return fail("decode", `frame body is not valid MessagePack: ${error}`);
  }
  if (!isPlainMap(value)) return fail("decode", "frame body must be a map");
  const type = value.message_type;
  if (type === "hello") {
    const hello = HelloSchema.safeParse(value);
    if (!hello.success) return fail("hello", `bad hello: ${hello.error.issues[0]!.message}`);
    if (hello.data.protocol !== PROTOCOL_VERSION) return fail("hello", `unsupported protocol version ${hello.data.protocol}`);
    return { ok: true, frameType: "hello", value };
  }
  if (type === "ack" || type === "ping" || type === "pong") {
    const control = CONTROL[type].safeParse(value);
    return control.success ? { ok: true, frameType: type, value } : fail("control", `bad ${type}: ${control.error.issues[0]!.message}`);
  }
  let envelope;
  try {
    envelope = parseEnvelope(value);
  } catch (error) {
    return { ok: false, stage: "envelope", error: HermesError.from(error) };
  }
  try {
    checkPayload(envelope.payload);
  } catch (error) {
    return { ok: false, stage: "payload", error: HermesError.from(error) };
  }
  if (envelope.seq === undefined) return fail("connection", "seq: required on a connection");
  return { ok: true, frameType: "envelope", value: envelope, ...(arrivedExpired(envelope) && { answerCode: ErrorCode.TTL_EXPIRED }) };
}

function fail(stage: Stage, reason: string): Outcome {
  return { ok: false, stage, error: new HermesError(ErrorCode.INVALID_REQUEST, reason, { reason }) };
}
