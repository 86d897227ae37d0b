/**
 * hermes-mesh public API. Everything an actor author or an embedding program imports comes
 * from here, by name.
 */

// Protocol: envelopes, codes, errors, ids, codecs and framing.
export { MessageType, ControlType, HttpMsgType, ENVELOPE_TYPES } from "./protocol/message-types.ts";
export { ErrorCode, errorName, isErrorCode, type ErrorName } from "./protocol/error-codes.ts";
export { HermesError, type ErrorPayload, type ErrorFields } from "./protocol/hermes-error.ts";
export { EnvelopeSchema, PayloadSchema, DEFAULT_TTL_MS, DEFAULT_PRIORITY, type Envelope, type Payload } from "./protocol/envelope.ts";
export { isValidEnvelope, parseEnvelope, isPlainMap } from "./protocol/envelope-check.ts";
export {
  HelloSchema, AckSchema, PingSchema, PongSchema, ControlFrameSchema, CodecName, PROTOCOL_VERSION,
  type Hello, type Ack, type Ping, type Pong, type ControlFrame,
} from "./protocol/control-frames.ts";
export { newMessageId, isUlid, stableAgentId } from "./protocol/ids.ts";
export { createPlainCodec, createRecordsCodec, createCodec, negotiateCodec, SUPPORTED_CODECS, type FrameCodec } from "./protocol/codec.ts";
export { FrameDecoder, DEFAULT_MAX_FRAME_BYTES } from "./protocol/frame-decoder.ts";
export { encodeFrame } from "./protocol/frame-encoder.ts";
export { arrivedExpired, remainingTtl, ttlDeadline, forwardEnvelope } from "./protocol/ttl.ts";
export {
  createRequest, createEvent, createReply, createErrorReply, createCancel,
  type Route, type EnvelopeOptions,
} from "./protocol/envelope-factory.ts";

// Transport: listeners, connections, request/response.
export { parseAddress, formatAddress, type Address } from "../mesh/address.ts";
export { Connection, type ConnectionOptions, type ConnectionStatus, type EnvelopeHandler } from "../mesh/connection.ts";
export { listen, dial, Listener, type ListenOptions } from "../mesh/transport.ts";
export { RequestChannel, type RequestContext, type RequestHandler, type RequestOptions } from "../mesh/request-channel.ts";

export { VERSION } from "./version.ts";
