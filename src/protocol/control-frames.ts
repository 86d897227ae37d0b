import { z } from "zod";
import { ControlType } from "./message-types.ts";

/** The protocol version this implementation speaks. */
export const PROTOCOL_VERSION = 1;

/** Codec names. `msgpack` (plain maps) is mandatory; `msgpackr-records` is the fast path between Bun peers. */
export const CodecName = {
  MSGPACK: "msgpack",
  MSGPACKR_RECORDS: "msgpackr-records",
} as const;
export type CodecName = (typeof CodecName)[keyof typeof CodecName];

/** First frame in each direction (docs/protocol.md §2). */
export const HelloSchema = z.looseObject({
  message_type: z.literal(ControlType.HELLO),
  protocol: z.number().int().min(1),
  node: z.string().min(1).max(256),
  codecs: z.array(z.string()).min(1).max(32).refine((c) => c.includes(CodecName.MSGPACK), {
    message: `codecs must include "${CodecName.MSGPACK}"`,
  }),
  window: z.number().int().min(1).max(1_000_000),
  token: z.string().optional(),
  /** Largest frame body this side accepts (additive; a peer that omits it is assumed to take 16 MiB). */
  max_frame_bytes: z.number().int().min(1).optional(),
});
export type Hello = z.infer<typeof HelloSchema>;

/** Cumulative acknowledgement: every envelope with `seq <= N` on this connection was handled. */
export const AckSchema = z.looseObject({
  message_type: z.literal(ControlType.ACK),
  seq: z.number().int().min(0),
});
export type Ack = z.infer<typeof AckSchema>;

/** Liveness probe on an idle connection; the peer answers with a pong carrying the same nonce. */
export const PingSchema = z.looseObject({
  message_type: z.literal(ControlType.PING),
  nonce: z.number().int().optional(),
});
export type Ping = z.infer<typeof PingSchema>;

/** Answer to a ping. */
export const PongSchema = z.looseObject({
  message_type: z.literal(ControlType.PONG),
  nonce: z.number().int().optional(),
});
export type Pong = z.infer<typeof PongSchema>;

/** Any control frame. */
export const ControlFrameSchema = z.discriminatedUnion("message_type", [HelloSchema, AckSchema, PingSchema, PongSchema]);
export type ControlFrame = z.infer<typeof ControlFrameSchema>;

const CONTROL_TYPES: ReadonlySet<unknown> = new Set(Object.values(ControlType));

/** True when a decoded frame claims to be a control frame (by its `message_type`). */
export function isControlType(type: unknown): boolean {
  return CONTROL_TYPES.has(type);
}
