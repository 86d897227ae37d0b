import { z } from "zod";
import { ENVELOPE_TYPES, MessageType } from "./message-types.ts";

/** Default remaining life of a new envelope, in ms. */
export const DEFAULT_TTL_MS = 60_000;
/** Default priority: middle of 0..9. */
export const DEFAULT_PRIORITY = 5;

const ulid = z.string().regex(/^[0-9A-HJKMNP-TV-Z]{26}$/i, "must be a ULID (26 Crockford base32 characters)");
const address = z.string().min(1);
const int = z.number().int();

/** A payload is a map: arrays, strings, null and other scalars at the top are rejected (code 2). */
export const PayloadSchema = z.record(z.string(), z.unknown());

/**
 * The Hermes envelope (docs/protocol.md §3), the single source of truth for its shape.
 * Unknown fields are kept: the protocol grows only by adding optional fields.
 */
export const EnvelopeSchema = z
  .looseObject({
    message_id: ulid,
    message_type: z.enum(ENVELOPE_TYPES as [MessageType, ...MessageType[]]),
    trace_id: z.string().min(1),
    source_agent: address,
    target_agent: address.optional(),
    topic: address.optional(),
    capability: address.optional(),
    reply_to: address.optional(),
    correlation_id: z.string().optional(),
    context_id: z.string().optional(),
    priority: int.min(0).max(9).optional(),
    timestamp: int.min(0),
    ttl: int,
    attempt: int.min(1).optional(),
    seq: int.min(1).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    payload: PayloadSchema,
  })
  .superRefine((env, ctx) => {
    if (env.target_agent === undefined && env.topic === undefined && env.capability === undefined) {
      ctx.addIssue({ code: "custom", message: "one of target_agent, topic or capability is required", path: ["target_agent"] });
    }
    if (env.message_type === MessageType.REQUEST && env.reply_to === undefined) {
      ctx.addIssue({ code: "custom", message: "a request needs reply_to", path: ["reply_to"] });
    }
    if (
      (env.message_type === MessageType.RESPONSE ||
        env.message_type === MessageType.ERROR ||
        env.message_type === MessageType.PROGRESS ||
        env.message_type === MessageType.CANCEL) &&
      env.correlation_id === undefined
    ) {
      ctx.addIssue({ code: "custom", message: `a ${env.message_type} needs correlation_id`, path: ["correlation_id"] });
    }
  });

/** A valid envelope. */
export type Envelope = z.infer<typeof EnvelopeSchema>;
/** An envelope's payload map. */
export type Payload = Record<string, unknown>;
