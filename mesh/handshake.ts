import { timingSafeEqual } from "node:crypto";
import { negotiateCodec } from "../src/protocol/codec.ts";
import { HelloSchema, PROTOCOL_VERSION, type CodecName, type Hello } from "../src/protocol/control-frames.ts";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";
import { invalidFrame } from "./frame-errors.ts";

/**
 * Checks the peer's hello (docs/protocol.md §2): shape, protocol version, token. Returns it
 * with the codec both sides will use from now on; throws the coded refusal (2 or 5) to send
 * before closing.
 */
export function acceptHello(
  value: Record<string, unknown>,
  own: { role: "dialer" | "acceptor"; codecs: readonly string[]; requireToken?: string },
): { hello: Hello; codec: CodecName } {
  const parsed = HelloSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw invalidFrame(`bad hello: ${issue.path.join(".") || "(frame)"}: ${issue.message}`,
      "{message_type:'hello', protocol:1, node, codecs:['msgpack',...], window}");
  }
  const hello = parsed.data;
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
