import { createRequire } from "node:module";
import type { z } from "zod";
import { ErrorCode, HermesError } from "./errors.ts";
import { isUlid, newMessageId, ULID_PATTERN } from "./ids.ts";

/**
 * Envelope and control frame type names (docs/protocol.md §3 and §5), and the numeric
 * `msg_type` codes of the HTTP meta/payload binding (section 7).
 */

/**
 * Types an envelope may carry.
 *
 * @example
 * if (env.message_type === MessageType.PROGRESS) console.log(env.payload);
 */
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

/** Default remaining life of a new envelope, in ms. */
export const DEFAULT_TTL_MS = 60_000;
/** Default priority: middle of 0..9. */
export const DEFAULT_PRIORITY = 5;

/*
 * zod on demand. The wire's zod schemas (the envelope here, hello in handshake.ts, registry
 * updates in registry.ts) are the single source of truth for their shapes, but a mesh member
 * checks what it receives with hand-written checks that agree with them (test/conformance,
 * test/mesh/schema-checks.test.ts): zod runs only to explain a refusal, or when a program uses a
 * schema itself. Loaded, zod is a few MB of every idle actor (bench/footprint.bench.ts), so
 * nothing on an actor's path imports it: each schema is built on its first use, and zod is
 * required synchronously then, from this installation (`createRequire`, which Bun, Node and Deno
 * all have; the actor host's bundle keeps this module's source location for it, so zod resolves
 * from node_modules there as well).
 */

/** The `z` namespace of zod. */
export type Zod = typeof z;

let zod: Zod | undefined;

/** zod itself, loaded the first time anything asks for it. @internal: for the schemas of handshake.ts and registry.ts. */
export function loadZod(): Zod {
  return (zod ??= (createRequire(import.meta.url)("zod") as { z: Zod }).z);
}

/**
 * A value built with zod once, the first time the returned function is called.
 * @internal: for the schemas of handshake.ts and registry.ts.
 *
 * @example
 * const helloSchema = withZod((z) => z.looseObject({ message_type: z.literal("hello") }));
 * helloSchema().safeParse(frame);
 */
export function withZod<T>(build: (z: Zod) => T): () => T {
  let built: { value: T } | undefined;
  return () => (built ??= { value: build(loadZod()) }).value;
}

/**
 * A schema that behaves as `schema()` in every way (`parse`, `safeParse`, `shape`, `instanceof`,
 * composition into other schemas) but is built, and zod loaded, only on its first use: what a
 * module exports as its schema while its own hot path never touches it.
 * @internal: for the schemas of handshake.ts and registry.ts.
 *
 * @example
 * export const HelloSchema = lazySchema(helloSchema);
 * HelloSchema.safeParse(frame).success; // zod is loaded here, not at import
 */
export function lazySchema<S extends object>(schema: () => S): S {
  // The target is a stand-in: every trap answers for the real schema. Descriptors are reported
  // configurable, which a proxy must do for properties its target does not have.
  return new Proxy({} as S, {
    get: (_, key) => Reflect.get(schema(), key),
    set: (_, key, value) => Reflect.set(schema(), key, value),
    has: (_, key) => Reflect.has(schema(), key),
    ownKeys: () => Reflect.ownKeys(schema()),
    getOwnPropertyDescriptor: (_, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(schema(), key);
      return descriptor && { ...descriptor, configurable: true };
    },
    defineProperty: (_, key, descriptor) => Reflect.defineProperty(schema(), key, descriptor),
    deleteProperty: (_, key) => Reflect.deleteProperty(schema(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(schema()),
  });
}

/** A payload is a map: arrays, strings, null and other scalars at the top are rejected (code 2). */
const payloadSchema = (z: Zod) => z.record(z.string(), z.unknown());

/** See {@link EnvelopeSchema}. Built on first use: an actor checks envelopes with {@link isValidEnvelope}. */
const envelopeSchema = withZod((z) => {
  const ulid = z.string().regex(ULID_PATTERN, "must be a ULID (26 Crockford base32 characters)");
  const address = z.string().min(1);
  const int = z.number().int();
  return z
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
      payload: payloadSchema(z),
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
});

/** A payload map, as a schema (zod is loaded on its first use). */
export const PayloadSchema = lazySchema(withZod(payloadSchema));

/**
 * The Hermes envelope (docs/protocol.md §3), the single source of truth for its shape.
 * Unknown fields are kept: the protocol grows only by adding optional fields. zod is loaded on
 * its first use; receiving envelopes does not use it ({@link isValidEnvelope}).
 *
 * @example
 * EnvelopeSchema.safeParse(frame).success; // the reference; isValidEnvelope(frame) agrees
 */
export const EnvelopeSchema = lazySchema(envelopeSchema);

/** A valid envelope. */
export type Envelope = z.infer<typeof EnvelopeSchema>;
/** An envelope's payload map. */
export type Payload = Record<string, unknown>;

const TYPES = new Set(["request", "response", "event", "error", "progress", "cancel"]);

/**
 * The hot-path check: the same rules as {@link EnvelopeSchema}, written out so that a
 * million envelopes a second can be checked without building zod issue lists. The schema
 * stays the source of truth; a test runs both over the conformance vectors and random
 * envelopes and requires them to agree. Only when this says no does zod run (and load), to
 * explain why.
 */
export function isValidEnvelope(v: any): v is Envelope {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const id = v.message_id;
  if (!isUlid(id)) return false;
  const type = v.message_type;
  if (typeof type !== "string" || !TYPES.has(type)) return false;
  if (!nonEmpty(v.trace_id) || !nonEmpty(v.source_agent)) return false;
  const { target_agent, topic, capability } = v;
  if (target_agent === undefined && topic === undefined && capability === undefined) return false;
  if (!optionalNonEmpty(target_agent) || !optionalNonEmpty(topic) || !optionalNonEmpty(capability)) return false;
  if (!optionalNonEmpty(v.reply_to)) return false;
  if (type === "request" && v.reply_to === undefined) return false;
  const corr = v.correlation_id;
  if (corr !== undefined && typeof corr !== "string") return false;
  if (corr === undefined && type !== "request" && type !== "event") return false;
  if (v.context_id !== undefined && typeof v.context_id !== "string") return false;
  // Safe integers only, as zod's `.int()`: 2^53 and beyond cannot be told apart from their neighbours.
  const p = v.priority;
  if (p !== undefined && !(Number.isSafeInteger(p) && p >= 0 && p <= 9)) return false;
  if (!(Number.isSafeInteger(v.timestamp) && v.timestamp >= 0)) return false;
  if (!Number.isSafeInteger(v.ttl)) return false;
  if (v.attempt !== undefined && !(Number.isSafeInteger(v.attempt) && v.attempt >= 1)) return false;
  if (v.seq !== undefined && !(Number.isSafeInteger(v.seq) && v.seq >= 1)) return false;
  if (v.headers !== undefined && !isStringMap(v.headers)) return false;
  return isPlainMap(v.payload);
}

/**
 * Checks a decoded frame and returns it as an envelope, or throws HermesError code 2 with
 * the first failing field as `reason` and the schema's expectation as `expected`.
 */
export function parseEnvelope(value: unknown): Envelope {
  if (isValidEnvelope(value)) return value;
  const result = envelopeSchema().safeParse(value);
  if (result.success) return result.data;
  throw invalidEnvelopeError(result.error);
}

/** HermesError code 2 describing why a value is not an envelope. */
export function invalidEnvelopeError(error: z.ZodError): HermesError {
  const issue = error.issues[0]!;
  const path = issue.path.length > 0 ? issue.path.join(".") : "(envelope)";
  const reason = `${path}: ${issue.message}`;
  return new HermesError(ErrorCode.INVALID_REQUEST, `invalid envelope: ${reason}`, {
    reason,
    expected: "a Hermes envelope map (docs/protocol.md §3)",
  });
}

/** True for a plain map (msgpack map / JSON object): not null, not an array, not a binary or date. */
export function isPlainMap(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function nonEmpty(v: unknown): boolean {
  return typeof v === "string" && v.length > 0;
}

function optionalNonEmpty(v: unknown): boolean {
  return v === undefined || (typeof v === "string" && v.length > 0);
}

function isStringMap(v: unknown): boolean {
  if (!isPlainMap(v)) return false;
  for (const key in v) if (typeof (v as Record<string, unknown>)[key] !== "string") return false;
  return true;
}

/** Where a new envelope goes: exactly one of the three routing layers is usually set. */
export interface Route {
  target_agent?: string;
  topic?: string;
  capability?: string;
}

/** Optional fields a caller may set on a new request or event. */
export interface EnvelopeOptions {
  trace_id?: string;
  context_id?: string;
  priority?: number;
  ttl?: number;
  headers?: Record<string, string>;
}

/**
 * A new request envelope. `trace_id` defaults to the new message id, which starts a flow.
 *
 * @example
 * const req = createRequest("cli", { target_agent: "echo" }, { text: "hi" }, { ttl: 5000 });
 */
export function createRequest(source: string, route: Route, payload: Payload, options: EnvelopeOptions = {}): Envelope {
  return build(MessageType.REQUEST, source, route, payload, options, source);
}

/** A new event envelope (fire and forget, usually on a topic). */
export function createEvent(source: string, route: Route, payload: Payload, options: EnvelopeOptions = {}): Envelope {
  return build(MessageType.EVENT, source, route, payload, options, undefined);
}

/**
 * Builds an envelope with plain assignments in one fixed field order: no spreads (they cost
 * more than the rest of the envelope on the send path), no undefined fields on the wire, and
 * one object shape per field set, which the records codec turns into one structure.
 */
function build(
  type: MessageType,
  source: string,
  route: Route,
  payload: Payload,
  options: EnvelopeOptions,
  replyTo: string | undefined,
): Envelope {
  const now = Date.now();
  const message_id = newMessageId(now);
  const env = { message_id, message_type: type, trace_id: options.trace_id ?? message_id, source_agent: source } as Envelope;
  if (route.target_agent !== undefined) env.target_agent = route.target_agent;
  if (route.topic !== undefined) env.topic = route.topic;
  if (route.capability !== undefined) env.capability = route.capability;
  if (replyTo !== undefined) env.reply_to = replyTo;
  if (options.context_id !== undefined) env.context_id = options.context_id;
  if (options.priority !== undefined) env.priority = options.priority;
  env.timestamp = now;
  env.ttl = options.ttl ?? DEFAULT_TTL_MS;
  if (options.headers !== undefined) env.headers = options.headers;
  env.payload = payload;
  return env;
}

/**
 * An envelope answering `request`: same trace_id and context_id (never rewritten), addressed
 * to its reply_to, correlated by its message_id.
 */
export function createReply(
  type: typeof MessageType.RESPONSE | typeof MessageType.ERROR | typeof MessageType.PROGRESS,
  request: Pick<Envelope, "message_id" | "trace_id" | "reply_to" | "source_agent" | "context_id" | "priority" | "ttl">,
  source: string,
  payload: Payload,
): Envelope {
  // Assigned in the same field order as the literal it replaces (no spreads: they showed in
  // the profile of every answer), so the wire bytes are unchanged.
  const now = Date.now();
  const reply = {
    message_id: newMessageId(now),
    message_type: type,
    trace_id: request.trace_id,
    source_agent: source,
    target_agent: request.reply_to ?? request.source_agent,
    correlation_id: request.message_id,
  } as Envelope;
  if (request.context_id !== undefined) reply.context_id = request.context_id;
  if (request.priority !== undefined) reply.priority = request.priority;
  reply.timestamp = now;
  reply.ttl = DEFAULT_TTL_MS;
  reply.payload = payload;
  return reply;
}

/** An error envelope answering `request` with a coded error. */
export function createErrorReply(
  request: Parameters<typeof createReply>[1],
  source: string,
  error: HermesError,
): Envelope {
  return createReply(MessageType.ERROR, request, source, error.toPayload());
}

/**
 * The error envelope a connection sends about a frame it refused (docs/protocol.md §9):
 * correlated with the frame's message_id and addressed to its reply_to when the frame had them
 * as strings (`correlation_id: ""` when it had no id). Nothing else of the refused frame is used.
 *
 * @example
 * createFrameError({ message_id: "01J…", reply_to: "client" }, "echo", "client", error);
 */
export function createFrameError(frame: unknown, source: string, peer: string | undefined, error: HermesError): Envelope {
  const fields = (typeof frame === "object" && frame !== null ? frame : {}) as Record<string, unknown>;
  const correlation = typeof fields.message_id === "string" ? fields.message_id : "";
  const trace = typeof fields.trace_id === "string" && fields.trace_id ? fields.trace_id : correlation || "connection";
  const to = typeof fields.reply_to === "string" && fields.reply_to ? fields.reply_to : peer ?? "peer";
  return createErrorReply({ message_id: correlation, trace_id: trace, source_agent: to, ttl: DEFAULT_TTL_MS }, source, error);
}

/** A cancel for a request this side sent earlier. */
export function createCancel(request: Pick<Envelope, "message_id" | "trace_id" | "target_agent" | "topic" | "capability" | "source_agent">, reason = "cancelled by sender"): Envelope {
  return {
    message_id: newMessageId(),
    message_type: MessageType.CANCEL,
    trace_id: request.trace_id,
    source_agent: request.source_agent,
    ...(request.target_agent !== undefined && { target_agent: request.target_agent }),
    ...(request.topic !== undefined && { topic: request.topic }),
    ...(request.capability !== undefined && { capability: request.capability }),
    correlation_id: request.message_id,
    timestamp: Date.now(),
    ttl: DEFAULT_TTL_MS,
    payload: { reason },
  };
}

/**
 * TTL arithmetic (docs/protocol.md §3). `ttl` is the remaining life in ms when the envelope
 * left its last hop. A holder measures its own elapsed time from when it received the envelope,
 * so no clocks need to agree across hosts.
 */

/** True when an envelope arrived with no life left. */
export function arrivedExpired(env: Pick<Envelope, "ttl">): boolean {
  return env.ttl <= 0;
}

/** Remaining life in ms of an envelope received at `receivedAt`, as of `now` (may be <= 0). */
export function remainingTtl(env: Pick<Envelope, "ttl">, receivedAt: number, now: number = Date.now()): number {
  return env.ttl - Math.max(0, now - receivedAt);
}

/**
 * An envelope held since `held.since` with that wait taken off its ttl, counted once: `since`
 * moves to `now`. For whoever holds envelopes to resend them (a link's queue, a NATS link).
 *
 * @example
 * const held = { env, since: Date.now() };
 * resend(takeWaitOff(held, Date.now())); // env.ttl reduced by the time it waited
 */
export function takeWaitOff(held: { env: Envelope; since: number }, now: number): Envelope {
  held.env.ttl = remainingTtl(held.env, held.since, now);
  held.since = now;
  return held.env;
}

/** The local deadline (ms since epoch) by which an envelope received at `receivedAt` must be handled. */
export function ttlDeadline(env: Pick<Envelope, "ttl">, receivedAt: number): number {
  return receivedAt + env.ttl;
}

/**
 * The envelope as a forwarder passes it on: `ttl` reduced by the time it was held, at least
 * 1 ms per hop so a routing loop always runs out; everything else, `trace_id` above all,
 * unchanged. Returns null when nothing is left: the caller drops it (and answers a request
 * with code 9).
 *
 * @example
 * const next = forwardEnvelope(env, receivedAt); // env.ttl 5000, held 3 ms -> next.ttl 4997
 */
export function forwardEnvelope<T extends Envelope>(env: T, receivedAt: number, now: number = Date.now()): T | null {
  const ttl = env.ttl - Math.max(1, now - receivedAt);
  if (ttl <= 0) return null;
  const next = { ...env, ttl };
  delete next.seq;
  return next;
}
