/**
 * Frames (docs/protocol.md §1): the length prefix, the reader that splits a byte stream into
 * bodies without trusting a claimed length, the check that a decoded body is a map, and the
 * bounds every payload is held to. How a body is encoded is mesh/codecs.ts.
 */
import { C1 } from "msgpackr";
import { ErrorCode, HermesError } from "./errors.ts";
import { isPlainMap, parseEnvelope } from "./envelope.ts";
import { MAX_PAYLOAD_DEPTH, MsgpackExt, MsgpackTimestamp, UnreadableValue } from "./msgpack-values.ts";
import { CodecName, type FrameCodec } from "./codecs.ts";

/**
 * Refuses a payload that nests maps and arrays deeper than `limit` levels (or refers to
 * itself), or that holds a value MessagePack cannot carry or JavaScript could not be given,
 * with code 2 naming where (docs/protocol.md §3, "payload values"). Deep values crash recursive
 * encoders and decoders and every recursive reader after them, so they are stopped where they
 * enter; the walk stops at the limit, so it costs nothing like the payload's size for a flat one.
 * Sending, it refuses a BigInt beyond 64 bits, a symbol, a function or a Promise; receiving, what
 * a decoder could not read as a value (a timestamp with 10^9 nanoseconds, a map keyed by an
 * array, the byte 0xc1).
 *
 * @example
 * checkPayload({ a: { b: 1 } });        // fine
 * checkPayload(deeplyNested, 512);      // throws code 2: "payload.a.a.a… nests deeper than 512 levels"
 * checkPayload({ v: 2n ** 64n });       // throws code 2: "payload.v: 18446744073709551616 does not fit in 64 bits …"
 */
export function checkPayload(payload: unknown, limit = MAX_PAYLOAD_DEPTH): void {
  const path: string[] = [];
  const problem = problemIn(payload, limit, path);
  if (problem === undefined) return;
  const shown = path.reverse();
  const where = ["payload", ...shown.slice(0, 6)].join(".") + (shown.length > 6 ? "…" : "");
  if (problem === TOO_DEEP) {
    const reason = `${where} nests deeper than ${limit} levels`;
    throw new HermesError(ErrorCode.INVALID_REQUEST, `payload refused: ${reason}`, {
      reason,
      expected: `at most ${limit} levels of maps and arrays (the payload map is level 1)`,
    });
  }
  const reason = `${where}: ${problem}`;
  throw new HermesError(ErrorCode.INVALID_REQUEST, `payload refused: ${reason}`, {
    reason,
    expected: "MessagePack values: nil, bool, int (up to 64 bits), float, str, bin, array, map with string keys, timestamp, ext (docs/protocol.md §3)",
  });
}

const TOO_DEEP = "too deep";
const INT64_MIN = -(2n ** 63n);
const UINT64_MAX = 2n ** 64n - 1n;

/** The first problem in `value` (TOO_DEEP or a reason), its path pushed onto `path` innermost first. */
function problemIn(value: unknown, levelsLeft: number, path: string[]): string | undefined {
  switch (typeof value) {
    case "object":
      break;
    case "bigint":
      return value < INT64_MIN || value > UINT64_MAX ? `${value} does not fit in 64 bits (MessagePack ints are int64 or uint64)` : undefined;
    case "symbol":
      return "a symbol has no MessagePack form";
    case "function":
      return "a function has no MessagePack form";
    default:
      return undefined;
  }
  if (value === null) return undefined;
  const kind = value.constructor;
  if (kind !== Object && kind !== Array && kind !== undefined) {
    if (ArrayBuffer.isView(value) || kind === MsgpackExt || kind === MsgpackTimestamp || kind === Date) return undefined;
    if (kind === UnreadableValue) return (value as UnreadableValue).reason;
    if (value === C1) return "0xc1 is never used in MessagePack";
    if (value instanceof Promise) return "a Promise has no MessagePack form (was an await forgotten?)";
    if (kind === Map) return problemInMap(value as Map<unknown, unknown>, levelsLeft, path);
    // Any other object is written as its enumerable properties, as msgpackr writes it.
  }
  if (levelsLeft === 0) return TOO_DEEP;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = problemIn(value[i], levelsLeft - 1, path);
      if (problem !== undefined) return path.push(String(i)), problem;
    }
    return undefined;
  }
  for (const key in value) {
    const problem = problemIn((value as Record<string, unknown>)[key], levelsLeft - 1, path);
    if (problem !== undefined) return path.push(key), problem;
  }
  return undefined;
}

/** A Map goes as a MessagePack map: its keys may be any scalar, never an array or a map. */
function problemInMap(map: Map<unknown, unknown>, levelsLeft: number, path: string[]): string | undefined {
  if (levelsLeft === 0) return TOO_DEEP;
  let i = 0;
  for (const [key, field] of map) {
    i++;
    if (typeof key === "object" && key !== null) {
      const kind = key.constructor;
      if (Array.isArray(key) || kind === Object || kind === Map || kind === undefined) return path.push(`<key ${i}>`), `map key ${i} is ${Array.isArray(key) ? "an array" : "a map"}: map keys must be scalars`;
    }
    const keyProblem = typeof key === "object" && key !== null ? problemIn(key, 1, path) : problemIn(key, levelsLeft - 1, path);
    if (keyProblem !== undefined) return path.push(`<key ${i}>`), keyProblem;
    const problem = problemIn(field, levelsLeft - 1, path);
    if (problem !== undefined) return path.push(String(key)), problem;
  }
  return undefined;
}

/**
 * About how many bytes a value takes on the wire: string lengths, binary lengths, 9 per number
 * and a few per container and key. For byte budgets, where being cheap matters more than being
 * exact; the walk stops at MAX_PAYLOAD_DEPTH.
 *
 * @example
 * approximateBytes({ text: "x".repeat(4 << 20) }); // about 4 MiB
 */
export function approximateBytes(value: unknown, levelsLeft = MAX_PAYLOAD_DEPTH): number {
  switch (typeof value) {
    case "string":
      return value.length + 5;
    case "number":
    case "bigint":
      return 9;
    case "object": {
      if (value === null) return 1;
      if (ArrayBuffer.isView(value)) return value.byteLength + 5;
      if (levelsLeft === 0) return 5;
      let total = 5;
      if (Array.isArray(value)) {
        for (const item of value) total += approximateBytes(item, levelsLeft - 1);
        return total;
      }
      if (value instanceof Map) {
        for (const [key, field] of value) total += approximateBytes(key, 1) + approximateBytes(field, levelsLeft - 1);
        return total;
      }
      for (const key in value) total += key.length + 1 + approximateBytes((value as Record<string, unknown>)[key], levelsLeft - 1);
      return total;
    }
    default:
      return 1;
  }
}

/**
 * One frame as bytes: `u32be length` then the body. For one-off frames (tests, tools, other
 * implementations' vectors); connections write frames through their coalescing write queue.
 *
 * @example
 * encodeFrame(createPlainCodec().encode({ message_type: "ping" }));
 */
export function encodeFrame(body: Uint8Array): Uint8Array {
  const frame = new Uint8Array(4 + body.length);
  new DataView(frame.buffer).setUint32(0, body.length, false);
  frame.set(body, 4);
  return frame;
}

/** Receives one frame body: bytes `start` (inclusive) to `end` (exclusive) of `buffer`. */
export type FrameCallback = (buffer: Uint8Array, start: number, end: number) => void;

const LANDING_BYTES = 64 * 1024;

/** A reusable receive buffer with its DataView made once (msgpackr reads `dataView` from its source). */
function newLanding(): Uint8Array {
  const landing = new Uint8Array(LANDING_BYTES);
  (landing as Uint8Array & { dataView?: DataView }).dataView = new DataView(landing.buffer);
  return landing;
}

/** Default maximum frame body: 16 MiB (docs/protocol.md §1). */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

/**
 * Splits a byte stream into frame bodies (`u32be length` + `length` bytes). Keeps a partial
 * tail between chunks and only joins the pieces of a frame once all of its bytes have arrived,
 * so a peer that claims 4 GiB and sends nothing costs nothing. A frame body is handed to
 * `onFrame` as a range of a buffer (often the caller's chunk itself, so decoding needs no view
 * per frame): use it before `push` returns.
 *
 * Throws HermesError code 6 for a frame over the limit and code 2 for a zero length: after
 * either the stream cannot be trusted and the connection should close.
 */
export class FrameDecoder {
  readonly maxFrameBytes: number;
  #pending: Uint8Array[] = [];
  #landing: Uint8Array | undefined;
  #pendingBytes = 0;
  /**
   * Length of the frame being assembled, or -1 while its header is incomplete. While -1,
   * #pending holds fewer than 4 header bytes; otherwise it holds body bytes only.
   */
  #need = -1;

  constructor(maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {
    this.maxFrameBytes = maxFrameBytes;
  }

  /**
   * True while `onFrame` has the last frame of the chunk being pushed, when less than a frame
   * header follows it: nothing else read waits behind it (Connection.settle writes its answer
   * at once then).
   */
  lastOfChunk = false;

  /** Bytes held for an incomplete frame, its header included: above 0 from a frame's first byte to its last. */
  get bufferedBytes(): number {
    return this.#need >= 0 ? this.#pendingBytes + 4 : this.#pendingBytes;
  }

  /** Feeds a chunk; calls `onFrame` for every complete frame body in it, in order. */
  push(chunk: Uint8Array, onFrame: FrameCallback): void {
    let offset = 0;
    // A frame is in progress when header bytes are held or a header was read (its body may have no bytes yet).
    if (this.#pendingBytes > 0 || this.#need >= 0) {
      offset = this.#completeTail(chunk, onFrame);
      if (offset < 0) return;
    }
    let end = chunk.length;
    if (offset === 0 && end <= LANDING_BYTES) {
      // Decode from one long-lived buffer: a decoder's first look at a fresh chunk's
      // ArrayBuffer (msgpackr builds a DataView on it) costs more than copying the chunk.
      const landing = (this.#landing ??= newLanding());
      landing.set(chunk, 0);
      chunk = landing;
    } else if (offset > 0 && end - offset <= LANDING_BYTES) {
      const landing = (this.#landing ??= newLanding());
      landing.set(chunk.subarray(offset), 0);
      chunk = landing;
      end -= offset;
      offset = 0;
    }
    while (end - offset >= 4) {
      const length = this.#checkLength(
        ((chunk[offset]! << 24) >>> 0) + (chunk[offset + 1]! << 16) + (chunk[offset + 2]! << 8) + chunk[offset + 3]!,
      );
      if (end - offset - 4 < length) {
        // Header complete, body not: remember the length, keep only body bytes.
        this.#need = length;
        this.#keep(chunk.slice(offset + 4, end));
        this.lastOfChunk = false;
        return;
      }
      offset += 4 + length;
      this.lastOfChunk = end - offset < 4;
      onFrame(chunk, offset - length, offset);
    }
    this.lastOfChunk = false;
    if (offset < end) this.#keep(chunk.slice(offset, end));
  }

  /** Drops any partial frame (used when a connection closes). */
  reset(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#need = -1;
  }

  /** Tries to finish the pending frame with bytes from `chunk`; returns the offset reached, or -1 if still incomplete. */
  #completeTail(chunk: Uint8Array, onFrame: FrameCallback): number {
    let offset = 0;
    if (this.#need < 0) {
      const missingHeader = 4 - this.#pendingBytes;
      if (chunk.length < missingHeader) {
        this.#keep(chunk.slice());
        return -1;
      }
      const header = new Uint8Array(4);
      let i = 0;
      for (const piece of this.#pending) for (const b of piece) header[i++] = b;
      header.set(chunk.subarray(0, missingHeader), i);
      const length = this.#checkLength(((header[0]! << 24) >>> 0) + (header[1]! << 16) + (header[2]! << 8) + header[3]!);
      this.reset();
      this.#need = length;
      offset = missingHeader;
    }
    const missing = this.#need - this.#pendingBytes;
    if (chunk.length - offset < missing) {
      this.#pending.push(chunk.slice(offset));
      this.#pendingBytes += chunk.length - offset;
      return -1;
    }
    const body = new Uint8Array(this.#need);
    let at = 0;
    for (const piece of this.#pending) {
      body.set(piece, at);
      at += piece.length;
    }
    body.set(chunk.subarray(offset, offset + missing), at);
    this.reset();
    this.lastOfChunk = chunk.length - offset - missing < 4;
    onFrame(body, 0, body.length);
    this.lastOfChunk = false;
    return offset + missing;
  }

  #keep(bytes: Uint8Array): void {
    this.#pending.push(bytes);
    this.#pendingBytes += bytes.length;
  }

  #checkLength(length: number): number {
    if (length === 0) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, "frame length 0 is invalid", {
        reason: "zero-length frame",
        expected: "u32be length >= 1 followed by a MessagePack map",
      });
    }
    if (length > this.maxFrameBytes) {
      throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, `frame of ${length} bytes exceeds the ${this.maxFrameBytes}-byte limit`, {
        resource: "frame_bytes",
        used: length,
        limit: this.maxFrameBytes,
      });
    }
    return length;
  }
}

/** Code 2 for a frame this side cannot accept, with the protocol's `reason` and `expected`. */
export function invalidFrame(reason: string, expected: unknown): HermesError {
  return new HermesError(ErrorCode.INVALID_REQUEST, reason, { reason, expected });
}

/** A short description of a decoded value that is not a map, for error reasons. */
export function describeValue(value: unknown): string {
  if (value === null) return "nil";
  if (Array.isArray(value)) return "an array";
  if (value instanceof Uint8Array) return "binary";
  if (value instanceof MsgpackTimestamp) return "a timestamp";
  if (value instanceof MsgpackExt) return `an extension of type ${value.type}`;
  return `a ${typeof value}`;
}

/** Why a decoded map is not an envelope, as the schema explains it (code 2 naming the field). */
export function envelopeRejection(value: unknown): HermesError {
  try {
    parseEnvelope(value);
    return invalidFrame("envelope rejected", "a Hermes envelope");
  } catch (error) {
    return HermesError.from(error, ErrorCode.INVALID_REQUEST);
  }
}

/** Code 6 for a peer that sent more unacknowledged envelopes than this side's window allows. */
export function windowExceeded(used: number, limit: number): HermesError {
  return new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "peer exceeded the credit window", { resource: "window", used, limit });
}

/** A decoded frame body: the map, or why it is refused and whether the stream can go on. */
export type FrameBody = { map: Record<string, any> } | { error: HermesError; fatal: boolean };

/**
 * Decodes one frame body and checks it is a map (docs/protocol.md §1). Undecodable bytes are
 * fatal on a records stream, whose structure table is lost with them; on plain msgpack the
 * framing still holds and the connection goes on.
 */
export function decodeFrameBody(codec: FrameCodec, buffer: Uint8Array, start: number, end: number, handshaking: boolean): FrameBody {
  let value: unknown;
  try {
    value = codec.decode(buffer, start, end);
  } catch (error) {
    // A recursive decoder runs out of stack on values nested thousands deep.
    const tooDeep = error instanceof RangeError;
    return {
      error: new HermesError(ErrorCode.INVALID_REQUEST, tooDeep ? "frame body nests too deep to decode" : "frame body is not valid MessagePack", {
        reason: error instanceof Error ? error.message : String(error),
        expected: tooDeep ? `a MessagePack map whose payload nests at most ${MAX_PAYLOAD_DEPTH} levels` : "a MessagePack map",
      }),
      fatal: codec.name !== CodecName.MSGPACK,
    };
  }
  if (!isPlainMap(value)) {
    return {
      error: new HermesError(ErrorCode.INVALID_REQUEST, "frame body must be a map", { reason: `got ${describeValue(value)}`, expected: "a MessagePack map" }),
      fatal: handshaking,
    };
  }
  return { map: value };
}
