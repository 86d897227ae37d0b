import { z } from "zod";
import { type Route, type Envelope, type Payload, HttpMsgType } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

/** The meta/payload version this gateway speaks (docs/protocol.md §7). */
export const META_VERSION = "1.2";
/** Longest a request through the gateway may wait, in seconds. */
export const MAX_TTL_SECONDS = 3600;

/** The `meta` of the HTTP meta/payload form (docs/protocol.md §7). */
export const MetaSchema = z.looseObject({
  version: z.literal(META_VERSION, { error: `version must be "${META_VERSION}"` }),
  msg_type: z.union([z.literal(HttpMsgType.TASK_REQUEST), z.literal(HttpMsgType.EVENT)], {
    error: `msg_type must be ${HttpMsgType.TASK_REQUEST} (TASK_REQUEST) or ${HttpMsgType.EVENT} (EVENT)`,
  }),
  sender_id: z.string().min(1),
  receiver_id: z.string().min(1),
  ttl: z.number().positive().max(MAX_TTL_SECONDS),
  trace_id: z.string().min(1),
});
export type Meta = z.infer<typeof MetaSchema>;

/** The meta/payload body. */
export const MetaFormSchema = z.looseObject({ meta: MetaSchema, payload: z.record(z.string(), z.unknown()) });

/** True when a parsed JSON body is in the meta/payload form (it has a `meta` key). */
export function isMetaForm(body: unknown): body is { meta: unknown; payload: unknown } {
  return typeof body === "object" && body !== null && !Array.isArray(body) && "meta" in body;
}

/** Checks a meta/payload body; throws HermesError code 2 naming the first bad field. */
export function parseMetaForm(body: unknown): { meta: Meta; payload: Payload } {
  const result = MetaFormSchema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const reason = `${issue.path.join(".") || "body"}: ${issue.message}`;
  throw new HermesError(ErrorCode.INVALID_REQUEST, `invalid meta: ${reason}`, {
    reason,
    expected: { meta: { version: META_VERSION, msg_type: "1 or 5", sender_id: "string", receiver_id: "string", ttl: "seconds", trace_id: "string" }, payload: "a map" },
  });
}

/**
 * Where a meta request goes: `receiver_id` when it names an actor (name, address or stable
 * id); otherwise, when the payload names a `tool`, the actor with that capability (the seed's
 * `{ tool: "calculator" }`). Neither: code 8.
 */
export function routeOfMeta(meta: Meta, payload: Payload, knows: (target: string) => boolean): Route {
  if (knows(meta.receiver_id)) return { target_agent: meta.receiver_id };
  if (typeof payload.tool === "string" && payload.tool) return { capability: payload.tool };
  throw new HermesError(ErrorCode.UNROUTABLE, `no actor named '${meta.receiver_id}' and the payload names no tool`, { target: meta.receiver_id });
}

/** The meta/payload answer to a meta request: msg_type 2, same trace, sender and receiver swapped. */
export function metaReply(meta: Meta, payload: Payload, msgType: number = HttpMsgType.TASK_RESULT): { meta: Record<string, unknown>; payload: Payload } {
  return {
    meta: { version: META_VERSION, msg_type: msgType, sender_id: meta.receiver_id, receiver_id: meta.sender_id, ttl: meta.ttl, trace_id: meta.trace_id },
    payload,
  };
}

/** A meta answer for a body whose meta could not be read: what can be mirrored is mirrored. */
export function metaErrorReply(body: unknown, error: HermesError): { meta: Record<string, unknown>; payload: Payload } {
  const meta = (isMetaForm(body) && typeof body.meta === "object" && body.meta !== null ? body.meta : {}) as Record<string, unknown>;
  return {
    meta: {
      version: META_VERSION,
      msg_type: HttpMsgType.TASK_RESULT,
      sender_id: typeof meta.receiver_id === "string" ? meta.receiver_id : "gateway",
      receiver_id: typeof meta.sender_id === "string" ? meta.sender_id : "unknown",
      ...(typeof meta.ttl === "number" && { ttl: meta.ttl }),
      ...(typeof meta.trace_id === "string" && { trace_id: meta.trace_id }),
    },
    payload: error.toPayload(),
  };
}

/** The HTTP form of an envelope's answer: native envelopes are returned as they are. */
export function isAnswer(env: Envelope): boolean {
  return env.message_type === "response" || env.message_type === "error";
}
