/**
 * The exact reader: one MessagePack value read without msgpackr, for the bodies msgpackr cannot
 * read as they are. Gives what the frame codecs give (mesh/msgpack-values.ts).
 */
import { readExtension, settleDecodedMaps, UnreadableValue } from "./msgpack-values.ts";

/**
 * Reads one whole MessagePack value from `bytes[start..end)` without msgpackr: the plain codec's
 * reader for the bodies msgpackr cannot read as they are (a fixext 1 or 2 of type 0x72, which
 * msgpackr takes for its record definitions even with records off; a map keyed by an array).
 *
 * @example
 * readExactly(new Uint8Array([0x81, 0x01, 0xa1, 0x61])); // Map { 1 => "a" }
 * It gives what the codecs give (maps as objects with string keys, Maps when a key is another
 * scalar, int64 as a number up to 2^53 and BigInt beyond, bin as Uint8Array, extensions exactly) and puts an UnreadableValue
 * where JavaScript cannot be given the value, so the payload check can name its path. Throws on
 * bytes that are not exactly one value.
 */
export function readExactly(bytes: Uint8Array, start = 0, end = bytes.length): unknown {
  const reader = new ExactReader(bytes, start, end);
  const value = reader.value(0);
  if (reader.at !== end) throw new Error(`${end - reader.at} bytes after the value`);
  return value;
}

/**
 * True when the bytes may hold `d4 72` or `d5 72`: a fixext 1 or 2 of type 0x72, which msgpackr
 * reads as its record definition even with records off. Two scans in native code; valid UTF-8
 * never holds either pair, so a hit (the real thing, or bytes inside a bin or a number) is rare.
 * The plain codec reads such a body with readExactly.
 *
 * @example
 * mayHoldRecordTag(Uint8Array.of(0x81, 0xa1, 0x76, 0xd4, 0x72, 0x00)); // true
 */
export function mayHoldRecordTag(body: Uint8Array): boolean {
  for (const header of [0xd4, 0xd5]) {
    for (let at = body.indexOf(header); at !== -1 && at < body.length - 1; at = body.indexOf(header, at + 1)) {
      if (body[at + 1] === 0x72) return true;
    }
  }
  return false;
}

/** Deeper than any payload may nest (the frame map, the payload map, 512 levels, a margin): refused outright. */
const MAX_READ_DEPTH = 520;
const text = new TextDecoder();

class ExactReader {
  at: number;
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #end: number;

  constructor(bytes: Uint8Array, start: number, end: number) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.at = start;
    this.#end = end;
  }

  value(depth: number): unknown {
    if (depth > MAX_READ_DEPTH) throw new RangeError(`nests deeper than ${MAX_READ_DEPTH} levels`);
    const token = this.#take(1)[0]!;
    if (token < 0x80) return token;
    if (token < 0x90) return this.#map(token & 0x0f, depth);
    if (token < 0xa0) return this.#array(token & 0x0f, depth);
    if (token < 0xc0) return text.decode(this.#take(token & 0x1f));
    if (token >= 0xe0) return token - 0x100;
    const v = this.#view;
    switch (token) {
      case 0xc0: return null;
      case 0xc1: return new UnreadableValue("0xc1 is never used in MessagePack");
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return new Uint8Array(this.#take(this.#uint(1)));
      case 0xc5: return new Uint8Array(this.#take(this.#uint(2)));
      case 0xc6: return new Uint8Array(this.#take(this.#uint(4)));
      case 0xc7: return this.#extension(this.#uint(1), false);
      case 0xc8: return this.#extension(this.#uint(2), false);
      case 0xc9: return this.#extension(this.#uint(4), false);
      case 0xca: return v.getFloat32(this.#skip(4));
      case 0xcb: return v.getFloat64(this.#skip(8));
      case 0xcc: return this.#uint(1);
      case 0xcd: return this.#uint(2);
      case 0xce: return this.#uint(4);
      case 0xcf: return wide(v.getBigUint64(this.#skip(8)));
      case 0xd0: return v.getInt8(this.#skip(1));
      case 0xd1: return v.getInt16(this.#skip(2));
      case 0xd2: return v.getInt32(this.#skip(4));
      case 0xd3: return wide(v.getBigInt64(this.#skip(8)));
      case 0xd4: return this.#extension(1, true);
      case 0xd5: return this.#extension(2, false);
      case 0xd6: return this.#extension(4, false);
      case 0xd7: return this.#extension(8, false);
      case 0xd8: return this.#extension(16, false);
      case 0xd9: return text.decode(this.#take(this.#uint(1)));
      case 0xda: return text.decode(this.#take(this.#uint(2)));
      case 0xdb: return text.decode(this.#take(this.#uint(4)));
      case 0xdc: return this.#array(this.#uint(2), depth);
      case 0xdd: return this.#array(this.#uint(4), depth);
      case 0xde: return this.#map(this.#uint(2), depth);
      default: return this.#map(this.#uint(4), depth);
    }
  }

  #array(length: number, depth: number): unknown[] {
    if (length > this.#end - this.at) throw new Error("array longer than the bytes left");
    const items = new Array(length);
    for (let i = 0; i < length; i++) items[i] = this.value(depth + 1);
    return items;
  }

  /**
   * A map as settleDecodedMaps gives it: a plain object when every key is a string, else a Map.
   * A map keyed by an array or a map becomes an UnreadableValue in its place (the frame map itself throws).
   */
  #map(length: number, depth: number): unknown {
    if (length * 2 > this.#end - this.at) throw new Error("map longer than the bytes left");
    const map = new Map<unknown, unknown>();
    let problem: string | undefined;
    for (let i = 0; i < length; i++) {
      const key = this.value(depth + 1);
      const value = this.value(depth + 1);
      if (typeof key === "object" && key !== null && (Array.isArray(key) || key.constructor === Object || key.constructor === Map)) {
        problem ??= `map key ${i + 1} is ${Array.isArray(key) ? "an array" : "a map"}: map keys must be scalars`;
      } else map.set(key, value);
    }
    if (problem === undefined) return settleDecodedMaps(map, 1);
    if (depth === 0) throw new Error(problem);
    return new UnreadableValue(problem);
  }

  #extension(length: number, fixext1: boolean): unknown {
    const code = this.#take(1)[0]!;
    return readExtension(code > 127 ? code - 256 : code, this.#take(length), fixext1);
  }

  #uint(size: 1 | 2 | 4): number {
    const at = this.#skip(size);
    return size === 1 ? this.#bytes[at]! : size === 2 ? this.#view.getUint16(at) : this.#view.getUint32(at);
  }

  /** Moves past `size` bytes and returns where they start. */
  #skip(size: number): number {
    const at = this.at;
    if (size > this.#end - at) throw new Error("unexpected end of MessagePack data");
    this.at = at + size;
    return at;
  }

  #take(size: number): Uint8Array {
    const at = this.#skip(size);
    return this.#bytes.subarray(at, at + size);
  }
}

/** int64/uint64 as msgpackr's `int64AsType: "auto"` gives them: a number within ±2^53, a BigInt beyond. */
function wide(value: bigint): number | bigint {
  return value >= -(2n ** 53n) && value <= 2n ** 53n ? Number(value) : value;
}
