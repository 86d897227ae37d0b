/**
 * Envelope and control frame type names (docs/protocol.md §3 and §5), and the numeric
 * `msg_type` codes of the HTTP meta/payload binding (section 7).
 */

/** Types an envelope may carry. */
export const MessageType = {
  REQUEST: "request",
  RESPONSE: "response",
  EVENT: "event",
  ERROR: "error",
  PROGRESS: "progress",
  CANCEL: "cancel",
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/** Every envelope type, for schemas and checks. */
export const ENVELOPE_TYPES = Object.values(MessageType) as readonly MessageType[];

/** Control frames: connection housekeeping, never routed, no payload rules. */
export const ControlType = {
  HELLO: "hello",
  ACK: "ack",
  PING: "ping",
  PONG: "pong",
} as const;
export type ControlType = (typeof ControlType)[keyof typeof ControlType];

/** Numeric `msg_type` of the HTTP meta/payload form. */
export const HttpMsgType = {
  TASK_REQUEST: 1,
  TASK_RESULT: 2,
  TASK_PROGRESS: 3,
  TASK_ERROR: 4,
  EVENT: 5,
  HEARTBEAT: 6,
} as const;
export type HttpMsgType = (typeof HttpMsgType)[keyof typeof HttpMsgType];

/** Types whose envelopes must name the request they belong to. */
export const CORRELATED_TYPES: ReadonlySet<string> = new Set([
  MessageType.RESPONSE,
  MessageType.ERROR,
  MessageType.PROGRESS,
  MessageType.CANCEL,
]);
