import { Buffer } from "node:buffer";
import type { z } from "zod";
import { ControlType, lazySchema, withZod } from "./envelope.ts";
import { timingSafeEqual } from "node:crypto";
import { DEFAULT_MAX_FRAME_BYTES, invalidFrame } from "./frames.ts";
import { CodecName, negotiateCodec, SUPPORTED_CODECS } from "./codecs.ts";
import { DEFAULT_MAX_UNACKED_BYTES } from "./flow-control.ts";
import type { LinkSettings } from "./transport.ts";
import { ErrorCode, HermesError } from "./errors.ts";

/** The protocol version this implementation speaks. */
export const PROTOCOL_VERSION = 1;

/** How long a receiver may hold an ack that has no frame to ride on, unless the sender's hello offers longer (docs/protocol.md §4). */
export const PROTOCOL_ACK_DELAY_MS = 5;
/** The longest `ack_delay_ms` a hello may offer: an hour. */
const MAX_ACK_DELAY_MS = 3_600_000;

/*
 * The control frames' schemas are the reference for their shapes; each is built, and zod
 * loaded, on its first use (envelope.ts). A connection checks a hello with isValidHello and asks
 * the schema only to explain a refusal; acks and pings are checked where they are read
 * (connection.ts).
 */
const helloSchema = withZod((z) =>
  z.looseObject({
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
    /** How long the peer may hold an ack with nothing to ride on (additive; absent: 5 ms, §4). */
    ack_delay_ms: z.number().int().min(0).max(MAX_ACK_DELAY_MS).optional(),
  }),
);
const ackSchema = withZod((z) => z.looseObject({ message_type: z.literal(ControlType.ACK), seq: z.number().int().min(0) }));
const pingSchema = withZod((z) => z.looseObject({ message_type: z.literal(ControlType.PING), nonce: z.number().int().optional() }));
const pongSchema = withZod((z) => z.looseObject({ message_type: z.literal(ControlType.PONG), nonce: z.number().int().optional() }));

/**
 * First frame in each direction (docs/protocol.md §2).
 *
 * @example
 * HelloSchema.safeParse({ message_type: "hello", protocol: 1, node: "a", codecs: ["msgpack"], window: 64 }).success; // true
 */
export const HelloSchema = lazySchema(helloSchema);
export type Hello = z.infer<typeof HelloSchema>;

/** Cumulative acknowledgement: every envelope with `seq <= N` on this connection was handled. */
export const AckSchema = lazySchema(ackSchema);
export type Ack = z.infer<typeof AckSchema>;

/** Liveness probe on an idle connection; the peer answers with a pong carrying the same nonce. */
export const PingSchema = lazySchema(pingSchema);
export type Ping = z.infer<typeof PingSchema>;

/** Answer to a ping. */
export const PongSchema = lazySchema(pongSchema);
export type Pong = z.infer<typeof PongSchema>;

/** Any control frame. */
export const ControlFrameSchema = lazySchema(
  withZod((z) => z.discriminatedUnion("message_type", [helloSchema(), ackSchema(), pingSchema(), pongSchema()])),
);
export type ControlFrame = z.infer<typeof ControlFrameSchema>;

/**
 * The hand-written check of a hello: the same rules as {@link HelloSchema} (a test runs both over
 * valid and broken hellos and requires them to agree), without loading zod.
 *
 * @example
 * isValidHello({ message_type: "hello", protocol: 1, node: "a", codecs: ["msgpack"], window: 64 }); // true
 */
export function isValidHello(v: any): v is Hello {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  if (v.message_type !== ControlType.HELLO) return false;
  if (!(Number.isSafeInteger(v.protocol) && v.protocol >= 1)) return false;
  if (!(typeof v.node === "string" && v.node.length >= 1 && v.node.length <= 256)) return false;
  const codecs = v.codecs;
  if (!Array.isArray(codecs) || codecs.length < 1 || codecs.length > 32) return false;
  let msgpack = false;
  for (let i = 0; i < codecs.length; i++) {
    // By index, as zod reads an array: a hole is undefined, not skipped.
    const codec = codecs[i];
    if (typeof codec !== "string") return false;
    if (codec === CodecName.MSGPACK) msgpack = true;
  }
  if (!msgpack) return false;
  if (!(Number.isSafeInteger(v.window) && v.window >= 1 && v.window <= 1_000_000)) return false;
  if (v.token !== undefined && typeof v.token !== "string") return false;
  if (v.ack_delay_ms !== undefined && !(Number.isSafeInteger(v.ack_delay_ms) && v.ack_delay_ms >= 0 && v.ack_delay_ms <= MAX_ACK_DELAY_MS)) return false;
  return v.max_frame_bytes === undefined || (Number.isSafeInteger(v.max_frame_bytes) && v.max_frame_bytes >= 1);
}

const CONTROL_TYPES: ReadonlySet<unknown> = new Set(Object.values(ControlType));

/** True when a decoded frame claims to be a control frame (by its `message_type`). */
export function isControlType(type: unknown): boolean {
  return CONTROL_TYPES.has(type);
}

/**
 * Checks the peer's hello (docs/protocol.md §2): shape, protocol version, token. Returns it
 * with the codec both sides will use from now on; throws the coded refusal (2 or 5) to send
 * before closing.
 */
export function acceptHello(
  value: Record<string, unknown>,
  own: { role: "dialer" | "acceptor"; codecs: readonly string[]; requireToken?: string },
): { hello: Hello; codec: CodecName } {
  let hello: Hello;
  if (isValidHello(value)) {
    hello = value;
  } else {
    // Refused: the schema says which field is wrong (and would be the judge if the two disagreed).
    const parsed = helloSchema().safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw invalidFrame(`bad hello: ${issue.path.join(".") || "(frame)"}: ${issue.message}`,
        "{message_type:'hello', protocol:1, node, codecs:['msgpack',...], window}");
    }
    hello = parsed.data;
  }
  if (hello.protocol !== PROTOCOL_VERSION) {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `unsupported protocol version ${hello.protocol}`, {
      reason: `protocol ${hello.protocol}`,
      expected: [PROTOCOL_VERSION],
    });
  }
  if (own.requireToken !== undefined && !tokensEqual(hello.token, own.requireToken)) {
    throw new HermesError(ErrorCode.AUTH_FAILED, hello.token === undefined ? "token required" : "wrong token", { auth_method: "token" });
  }
  // Both ends compute the same answer: the acceptor's preference decides.
  const codec = own.role === "acceptor" ? negotiateCodec(own.codecs, hello.codecs) : negotiateCodec(hello.codecs, own.codecs);
  return { hello, codec };
}

/** Constant-time comparison, so a token cannot be guessed byte by byte from timings. */
function tokensEqual(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}

/** Settings shared by both ends of a connection. */
export interface ConnectionOptions extends LinkSettings {
  /** This side's name in hello. */
  node: string;
  /** Codecs offered, preferred first; `msgpack` is always added. Default: every supported codec. */
  codecs?: readonly string[];
  /** Unacknowledged envelopes this side accepts from the peer. Default 4096 (measured: bench stream; 1024 costs about a fifth of the throughput). */
  window?: number;
  /** Token sent in hello (dialing side). */
  token?: string;
  /** Token the peer must present (accepting side); a missing or wrong one gets code 5 and a close. */
  requireToken?: string;
  /** Largest frame body accepted. Default 16 MiB. */
  maxFrameBytes?: number;
  /**
   * Offered in hello as `ack_delay_ms`: how long the peer may hold an ack that has nothing to
   * ride on. Longer than the protocol's 5 ms suits a link whose traffic needs no prompt acks (the
   * mesh's control connections: acks ride on heartbeats and pongs instead of waking both ends);
   * this side pings for them when it runs out of credit or waits in `whenAcknowledged`.
   * Default: not offered (5 ms).
   */
  ackDelayMs?: number;
  /** Send a ping after this long without traffic. Default 5000 ms. */
  pingIntervalMs?: number;
  /** Close when the peer's hello has not arrived after this long. Default 5000 ms. */
  helloTimeoutMs?: number;
  /** Close when a started frame is not complete after this long (slow-loris guard). Default 30000 ms. */
  frameTimeoutMs?: number;
  /** Close after this many undecodable or invalid frames. Default 16. */
  maxBadFrames?: number;
  /** Most envelopes that may wait for credit before send() refuses with code 6. Default 100000. */
  maxBacklog?: number;
  /**
   * Byte budget of sending: past this many unacknowledged frame bytes nothing more goes out
   * (backpressure), and once the envelopes waiting for credit hold as much, send() refuses with
   * code 6 (`send_bytes`). Default 16 MiB.
   */
  maxUnackedBytes?: number;
  /**
   * Byte budget of receiving: large envelopes (64 KiB and more) received and not yet handled
   * hold at most this much; one more is answered with code 6 (`receive_bytes`). Default 32 MiB,
   * above a well-behaved sender's maxUnackedBytes plus one frame.
   */
  maxUnhandledBytes?: number;
}

/** Options with every default filled in; `codecs` always includes plain `msgpack`. */
export type ResolvedConnectionOptions = Required<Omit<ConnectionOptions, "token" | "requireToken" | "ackDelayMs">> & Pick<ConnectionOptions, "token" | "requireToken" | "ackDelayMs">;

/** Fills in the defaults of a connection's options. */
export function resolveConnectionOptions(options: ConnectionOptions): ResolvedConnectionOptions {
  const codecs = [...(options.codecs ?? SUPPORTED_CODECS)];
  if (!codecs.includes(CodecName.MSGPACK)) codecs.push(CodecName.MSGPACK);
  return {
    window: 4096,
    maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
    pingIntervalMs: 5000,
    helloTimeoutMs: 5000,
    frameTimeoutMs: 30_000,
    maxBadFrames: 16,
    maxBacklog: 100_000,
    maxUnackedBytes: DEFAULT_MAX_UNACKED_BYTES,
    maxUnhandledBytes: 32 * 1024 * 1024,
    ...options,
    codecs,
  };
}
