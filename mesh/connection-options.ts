import { SUPPORTED_CODECS } from "../src/protocol/codec.ts";
import { CodecName, type Hello } from "../src/protocol/control-frames.ts";
import { DEFAULT_MAX_FRAME_BYTES } from "../src/protocol/frame-decoder.ts";
import type { Envelope } from "../src/protocol/envelope.ts";
import type { HermesError } from "../src/protocol/hermes-error.ts";
import type { Connection } from "./connection.ts";
import { DEFAULT_MAX_UNACKED_BYTES } from "./send-window.ts";

/** Settings shared by both ends of a connection. */
export interface ConnectionOptions {
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

/** The socket operations a connection uses; Bun's TCP and Unix sockets provide them. */
export interface ConnectionSocket {
  write(data: Uint8Array): number;
  end(): void;
  terminate?(): void;
}

/** Connection life cycle, as a discriminated union. */
export type ConnectionStatus =
  | { type: "handshaking" }
  | { type: "open"; peer: Hello; codec: CodecName }
  | { type: "unhealthy"; missedPongs: number }
  | { type: "healthy" }
  | { type: "closed"; error?: HermesError };

/** Receives every valid envelope; call `connection.settle(seq)` once it has been handled. */
export type EnvelopeHandler = (env: Envelope, seq: number, connection: Connection) => void;

/** Options with every default filled in; `codecs` always includes plain `msgpack`. */
export type ResolvedConnectionOptions = Required<Omit<ConnectionOptions, "token" | "requireToken">> & Pick<ConnectionOptions, "token" | "requireToken">;

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
