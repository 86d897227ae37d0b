import { Buffer } from "node:buffer";
import { z } from "zod";
import { type Route, type Envelope, type Payload, HttpMsgType, isPlainMap } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { MsgpackExt, MsgpackTimestamp, setOwn } from "../../mesh/msgpack-values.ts";

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

/**
 * The hot-path check of a meta/payload body: the rules of {@link MetaFormSchema} written out,
 * because zod's parse cost the gateway about 5 us of every invoke. The schema stays the source
 * of truth: a test runs both over valid and broken bodies and requires them to agree, and only
 * when this says no does zod run, to name the bad field.
 */
export function isValidMetaForm(body: unknown): body is { meta: Meta; payload: Payload } {
  if (!isPlainMap(body)) return false;
  const { meta, payload } = body as { meta: unknown; payload: unknown };
  if (!isPlainMap(meta) || !isPlainMap(payload)) return false;
  const m = meta as Record<string, unknown>;
  if (m.version !== META_VERSION || (m.msg_type !== HttpMsgType.TASK_REQUEST && m.msg_type !== HttpMsgType.EVENT)) return false;
  if (!nonEmpty(m.sender_id) || !nonEmpty(m.receiver_id) || !nonEmpty(m.trace_id)) return false;
  const ttl = m.ttl;
  return typeof ttl === "number" && Number.isFinite(ttl) && ttl > 0 && ttl <= MAX_TTL_SECONDS;
}

function nonEmpty(value: unknown): boolean {
  return typeof value === "string" && value.length > 0;
}

/** Checks a meta/payload body; throws HermesError code 2 naming the first bad field. */
export function parseMetaForm(body: unknown): { meta: Meta; payload: Payload } {
  if (isValidMetaForm(body)) return body;
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

/**
 * The JSON forms of the payload values JSON has no type for (docs/protocol.md §7): each is an
 * object with one reserved key. A map that itself has exactly one key, a reserved one, is
 * wrapped in `$map` so that it reads back as a map.
 */
const JSON_FORMS = new Set(["$timestamp", "$ext", "$bigint", "$bin", "$map", "$entries"]);

/**
 * A payload (or a whole answer) as JSON can carry it: a timestamp as
 * `{"$timestamp": {"seconds", "nanoseconds"}}`, an extension as `{"$ext": {"type", "base64"}}`,
 * an integer beyond ±2^53 as `{"$bigint": "<decimal>"}`, binary as `{"$bin": "<base64>"}`, a
 * map with keys that are not strings (a Map) as `{"$entries": [[key, value], ...]}`.
 * Copies only what changes.
 */
export function payloadToJson(value: unknown): unknown {
  if (typeof value === "bigint") return value >= -Number.MAX_SAFE_INTEGER && value <= Number.MAX_SAFE_INTEGER ? Number(value) : { $bigint: value.toString() };
  if (typeof value !== "object" || value === null) return value;
  if (value instanceof MsgpackTimestamp || value instanceof MsgpackExt) return value.toJSON();
  if (value instanceof Uint8Array) return { $bin: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("base64") };
  if (value instanceof Date && !Number.isNaN(value.getTime())) return MsgpackTimestamp.fromDate(value).toJSON();
  if (value instanceof Map) return { $entries: [...value].map(([key, field]) => [payloadToJson(key), payloadToJson(field)]) };
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = payloadToJson(value[i]);
      if (item !== value[i]) (copy ??= value.slice())[i] = item;
    }
    return copy ?? value;
  }
  let copy: Record<string, unknown> | undefined;
  const keys = Object.keys(value);
  for (const key of keys) {
    const field = (value as Record<string, unknown>)[key];
    const item = payloadToJson(field);
    if (item !== field) setOwn((copy ??= { ...value }), key, item);
  }
  const out = copy ?? value;
  return keys.length === 1 && JSON_FORMS.has(keys[0]!) ? { $map: out } : out;
}

/**
 * The inverse of payloadToJson, for what a client sends: the JSON forms become MsgpackTimestamp,
 * MsgpackExt, BigInt and Uint8Array. A malformed form is refused with code 2 naming its path.
 */
export function payloadFromJson(value: unknown, path = "payload"): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map((item, i) => payloadFromJson(item, `${path}.${i}`));
  const keys = Object.keys(value);
  const form = keys.length === 1 && JSON_FORMS.has(keys[0]!) ? keys[0]! : undefined;
  const inner = form === undefined ? undefined : (value as Record<string, unknown>)[form];
  switch (form) {
    case "$timestamp": {
      const { seconds, nanoseconds = 0 } = (typeof inner === "object" && inner !== null ? inner : {}) as Record<string, unknown>;
      const s = typeof seconds === "string" && /^-?\d+$/.test(seconds) ? BigInt(seconds) : seconds;
      if ((typeof s !== "number" && typeof s !== "bigint") || typeof nanoseconds !== "number") throw badForm(path, form, "seconds (an integer, or a decimal string) and nanoseconds (an integer) are required");
      try {
        return new MsgpackTimestamp(s, nanoseconds);
      } catch (error) {
        throw badForm(path, form, (error as Error).message);
      }
    }
    case "$ext": {
      const { type, base64 } = (typeof inner === "object" && inner !== null ? inner : {}) as Record<string, unknown>;
      if (typeof type !== "number") throw badForm(path, form, "type must be an integer -128..127 other than -1");
      try {
        return new MsgpackExt(type, bytesOfBase64(base64, path, form));
      } catch (error) {
        throw error instanceof HermesError ? error : badForm(path, form, (error as Error).message);
      }
    }
    case "$bigint": {
      if (typeof inner !== "string" || !/^-?\d+$/.test(inner)) throw badForm(path, form, "a decimal integer as a string");
      const n = BigInt(inner);
      if (n < -(2n ** 63n) || n > 2n ** 64n - 1n) throw badForm(path, form, `${inner} does not fit in 64 bits`);
      return n;
    }
    case "$bin":
      return bytesOfBase64(inner, path, form);
    case "$entries": {
      if (!Array.isArray(inner) || !inner.every((entry) => Array.isArray(entry) && entry.length === 2)) throw badForm(path, form, "a list of [key, value] pairs");
      const entries = inner.map(([key, field], i) => [payloadFromJson(key, `${path}.<key ${i + 1}>`), payloadFromJson(field, `${path}.${String(key)}`)] as const);
      // Only string keys (none __proto__): a map as any other (what the mesh would hand a handler anyway).
      if (entries.every(([key]) => typeof key === "string" && key !== "__proto__")) {
        const map: Record<string, unknown> = {};
        for (const [key, field] of entries) setOwn(map, key as string, field);
        return map;
      }
      return new Map(entries);
    }
    case "$map": {
      if (typeof inner !== "object" || inner === null || Array.isArray(inner)) throw badForm(path, form, "a JSON object");
      return fieldsFromJson(inner as Record<string, unknown>, path);
    }
    default:
      return fieldsFromJson(value as Record<string, unknown>, path);
  }
}

function fieldsFromJson(map: Record<string, unknown>, path: string): Record<string, unknown> | Map<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(map)) setOwn(out, key, payloadFromJson(field, `${path}.${key}`));
  // A key __proto__ (JSON.parse makes it an own field): a Map, as the mesh gives such a map (mesh/msgpack-values.ts).
  if (!Object.hasOwn(out, "__proto__")) return out;
  // The payload itself must be a plain map (docs/protocol.md §3).
  if (path === "payload") throw badForm(path, "__proto__", "a payload may not have a key __proto__ at its top (inside it, it may)");
  return new Map(Object.entries(out));
}

function bytesOfBase64(text: unknown, path: string, form: string): Uint8Array {
  if (typeof text !== "string" || text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) throw badForm(path, form, "base64 (standard alphabet, padded)");
  return new Uint8Array(Buffer.from(text, "base64"));
}

function badForm(path: string, form: string, problem: string): HermesError {
  const reason = `${path}: ${form}: ${problem}`;
  return new HermesError(ErrorCode.INVALID_REQUEST, `payload refused: ${reason}`, {
    reason,
    expected: { $timestamp: { seconds: "int", nanoseconds: "0..999999999" }, $ext: { type: "-128..127", base64: "string" }, $bigint: "decimal string", $bin: "base64", $map: "object", $entries: "[[key, value], ...]" },
  });
}
