import { ErrorCode, HermesError } from "./errors.ts";
import { Packr, Unpackr } from "msgpackr";

/** Codec names. `msgpack` (plain maps) is mandatory; `msgpackr-records` is the fast path between Bun peers. */
export const CodecName = {
  MSGPACK: "msgpack",
  MSGPACKR_RECORDS: "msgpackr-records",
} as const;
export type CodecName = (typeof CodecName)[keyof typeof CodecName];

/**
 * Bounds on what a payload may be: how deep it nests (checked on every send and receive) and
 * about how much memory it holds (for the byte budgets of remembered answers and links).
 */

/** How deep a payload may nest maps and arrays: the payload map itself is level 1 (docs/protocol.md section 9). */
export const MAX_PAYLOAD_DEPTH = 512;

/**
 * Refuses a payload that nests maps and arrays deeper than `limit` levels (or refers to
 * itself), with code 2 naming where. Deep values crash recursive encoders and decoders and
 * every recursive reader after them, so they are stopped where they enter; the walk stops at
 * the limit, so it costs nothing like the payload's size for a flat one.
 *
 * @example
 * checkPayloadDepth({ a: { b: 1 } });        // fine
 * checkPayloadDepth(deeplyNested, 512);      // throws code 2: "payload.a.a.a… nests deeper than 512 levels"
 */
export function checkPayloadDepth(payload: unknown, limit = MAX_PAYLOAD_DEPTH): void {
  const path: string[] = [];
  if (!nestsBeyond(payload, limit, path)) return;
  const shown = path.reverse();
  const where = ["payload", ...shown.slice(0, 6)].join(".") + (shown.length > 6 ? "…" : "");
  const reason = `${where} nests deeper than ${limit} levels`;
  throw new HermesError(ErrorCode.INVALID_REQUEST, `payload refused: ${reason}`, {
    reason,
    expected: `at most ${limit} levels of maps and arrays (the payload map is level 1)`,
  });
}

function nestsBeyond(value: unknown, levelsLeft: number, path: string[]): boolean {
  if (typeof value !== "object" || value === null || ArrayBuffer.isView(value)) return false;
  if (levelsLeft === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (nestsBeyond(value[i], levelsLeft - 1, path)) return path.push(String(i)) > 0;
    }
    return false;
  }
  for (const key in value) {
    if (nestsBeyond((value as Record<string, unknown>)[key], levelsLeft - 1, path)) return path.push(key) > 0;
  }
  return false;
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
      for (const key in value) total += key.length + 1 + approximateBytes((value as Record<string, unknown>)[key], levelsLeft - 1);
      return total;
    }
    default:
      return 1;
  }
}

/**
 * Encodes frame bodies for one direction of one connection. Stateful codecs (records) keep
 * their structure tables per connection and direction, so each side builds its own pair.
 */
export interface FrameCodec {
  readonly name: CodecName;
  /** Encodes a map. The result is only valid until the next call (it may share a buffer). */
  encode(value: unknown): Uint8Array;
  /** Decodes one whole frame body: `bytes[start..end)`, by default all of it. Throws on malformed bytes. */
  decode(bytes: Uint8Array, start?: number, end?: number): unknown;
}

/**
 * Plain MessagePack maps: what every implementation speaks. `copyBuffers` because the bytes a
 * socket hands over are reused after the callback returns. `int64AsType: "auto"` because other
 * encoders send every integer past 32 bits (any ms timestamp) as int64/uint64, which msgpackr
 * would otherwise decode as a BigInt that no envelope check accepts.
 */
export function createPlainCodec(): FrameCodec {
  let packr: Packr | undefined;
  // msgpackr's typings omit "auto" (numbers up to 2^53, BigInt beyond), which its README documents.
  const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, copyBuffers: true, int64AsType: "auto" as "bigint" });
  return {
    name: CodecName.MSGPACK,
    encode: (value) => (packr ??= newPackr({ useRecords: false, variableMapSize: true })).pack(wideIntegersAsInt64(value)),
    decode: (bytes, start = 0, end = bytes.length) => unpackr.unpack(bytes, { start, end }),
  };
}

/**
 * msgpackr writes an integer beyond 32 bits as a float64, which typed peers (Python, Go) read as
 * a float where the protocol says int. The frame's top-level integers (`timestamp` above all) go
 * out as BigInt instead, which msgpackr writes as int64. Payload contents are left as they are.
 */
function wideIntegersAsInt64(value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  let copy: Record<string, unknown> | undefined;
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === "number" && (v > 0xffffffff || v < -0x80000000) && Number.isSafeInteger(v)) {
      copy ??= { ...value };
      copy[key] = BigInt(v);
    }
  }
  return copy ?? value;
}

/**
 * msgpackr records in sequential mode: each new map shape is defined inline once, then sent
 * as a small record id. Both ends must see every frame in order, which a byte stream gives.
 * Only negotiated when both sides offer it (docs/protocol.md §2).
 */
export function createRecordsCodec(): FrameCodec {
  let packr: Packr | undefined;
  const unpackr = new Unpackr({ sequential: true, copyBuffers: true, mapsAsObjects: true, int64AsType: "auto" as "bigint" });
  return {
    name: CodecName.MSGPACKR_RECORDS,
    encode: (value) => (packr ??= newPackr({ sequential: true })).pack(value),
    decode: (bytes, start = 0, end = bytes.length) => unpackr.unpack(bytes, { start, end }),
  };
}

const PACK_BUFFER_BYTES = 64 * 1024;

/**
 * A packer writing into a 64 KiB buffer. msgpackr appends each result after the previous one
 * and allocates a new buffer of the current size when one fills; its default 8 KiB meant a new
 * buffer every few dozen envelopes on the send path. Created on first use, since a codec
 * instance used only for decoding never packs. (Handing it a buffer before every pack instead
 * breaks the sequential records mode, which keeps positions across calls.)
 */
function newPackr(options: ConstructorParameters<typeof Packr>[0]): Packr {
  const packr = new Packr(options);
  packr.useBuffer(Buffer.allocUnsafeSlow(PACK_BUFFER_BYTES));
  return packr;
}

/** Builds a fresh codec by name; plain msgpack for anything unknown. */
export function createCodec(name: string): FrameCodec {
  return name === CodecName.MSGPACKR_RECORDS ? createRecordsCodec() : createPlainCodec();
}

/** Codecs this implementation offers, fastest first (measured: bench/codec.bench.ts). */
export const SUPPORTED_CODECS: readonly CodecName[] = [CodecName.MSGPACKR_RECORDS, CodecName.MSGPACK];

/**
 * The codec both sides use after hello: the first codec in the accepting side's list that the
 * connecting side also offers. Both ends compute the same answer from the two hellos.
 */
export function negotiateCodec(acceptorCodecs: readonly string[], connectorCodecs: readonly string[]): CodecName {
  for (const name of acceptorCodecs) {
    if (connectorCodecs.includes(name) && (SUPPORTED_CODECS as readonly string[]).includes(name)) return name as CodecName;
  }
  return CodecName.MSGPACK;
}
