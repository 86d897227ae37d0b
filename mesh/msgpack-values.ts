/**
 * The MessagePack values JavaScript has no type of its own for, and how the codecs read them
 * exactly (docs/protocol.md §3, "payload values"): a timestamp keeps its seconds and
 * nanoseconds (`MsgpackTimestamp`), an extension type of any code keeps its type and bytes
 * (`MsgpackExt`). Integers past 2^53 are BigInt and bin is a Uint8Array, as msgpackr reads them.
 * A map whose keys are not all strings, or that has a key `__proto__`, is a `Map`
 * (settleDecodedMaps); the plain codec's walk before writing (integersAsInt64) keeps ints ints.
 *
 * msgpackr keeps its extension table in module state shared by every Packr and Unpackr in the
 * process, so this file takes over all 256 type codes once, at import. While a frame codec
 * decodes (`unpackExact`), every code reads as one of the classes here. Any other msgpackr user
 * in the process (the durable store's `moreTypes` rows) keeps msgpackr's own reading of its
 * extensions: Date for a timestamp, Set, Error, RegExp, typed arrays, big BigInt, undefined. Only
 * msgpackr's structured-clone references and string bundles (0x69, 0x70, 0x62), which nothing
 * here uses, read as `MsgpackExt` everywhere.
 */
import { Buffer } from "node:buffer";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { addExtension, Unpackr } from "msgpackr";

/** How deep a payload may nest maps and arrays: the payload map itself is level 1 (docs/protocol.md section 9). */
export const MAX_PAYLOAD_DEPTH = 512;

const NANOS_PER_SECOND = 1_000_000_000;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * A MessagePack timestamp (extension type -1): seconds since the Unix epoch and nanoseconds
 * within that second, both kept exactly. `seconds` is a number while it is a safe integer and a
 * BigInt beyond (the 96-bit format holds any int64). A timestamp read from the wire goes back
 * out in the format it came in (32, 64 or 96 bits) when that still holds it, else in the smallest
 * that does. A `Date` put in a payload is sent as a timestamp too, and arrives as this class.
 *
 * @example
 * const at = new MsgpackTimestamp(1514862245, 678901234);
 * at.toDate().toISOString(); // "2018-01-02T03:04:05.678Z" (a Date holds milliseconds only)
 * MsgpackTimestamp.fromDate(new Date(0)); // { seconds: 0, nanoseconds: 0 }
 */
export class MsgpackTimestamp {
  readonly seconds: number | bigint;
  readonly nanoseconds: number;
  /** Data bytes of the format it arrived in (4, 8 or 12), 0 when built here. */
  #width = 0;

  constructor(seconds: number | bigint, nanoseconds = 0) {
    if (typeof seconds === "bigint") {
      if (seconds < INT64_MIN || seconds > INT64_MAX) throw new RangeError(`timestamp seconds ${seconds} is outside int64`);
      if (seconds >= -Number.MAX_SAFE_INTEGER && seconds <= Number.MAX_SAFE_INTEGER) seconds = Number(seconds);
    } else if (!Number.isSafeInteger(seconds)) {
      throw new RangeError(`timestamp seconds must be a safe integer or a BigInt, got ${seconds}`);
    }
    if (!Number.isInteger(nanoseconds) || nanoseconds < 0 || nanoseconds >= NANOS_PER_SECOND) {
      throw new RangeError(`timestamp nanoseconds must be an integer 0..999999999, got ${nanoseconds}`);
    }
    this.seconds = seconds;
    this.nanoseconds = nanoseconds;
    Object.freeze(this);
  }

  /** The timestamp of a Date (millisecond precision). Throws RangeError for an invalid Date. */
  static fromDate(date: Date): MsgpackTimestamp {
    const ms = date.getTime();
    if (Number.isNaN(ms)) throw new RangeError("an invalid Date has no timestamp");
    const seconds = Math.floor(ms / 1000);
    return new MsgpackTimestamp(seconds, (ms - seconds * 1000) * 1_000_000);
  }

  /** As a Date, to the millisecond (nanoseconds below a millisecond are cut off). */
  toDate(): Date {
    return new Date(Number(this.seconds) * 1000 + Math.floor(this.nanoseconds / 1_000_000));
  }

  /** The gateway's JSON form (docs/protocol.md §7); seconds beyond 2^53 as a decimal string. */
  toJSON(): { $timestamp: { seconds: number | string; nanoseconds: number } } {
    return { $timestamp: { seconds: typeof this.seconds === "bigint" ? this.seconds.toString() : this.seconds, nanoseconds: this.nanoseconds } };
  }

  /** @internal Reads the data bytes of an extension -1; a string says why they are not a timestamp. */
  static fromBytes(data: Uint8Array): MsgpackTimestamp | string {
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    let timestamp: MsgpackTimestamp;
    if (data.length === 4) {
      timestamp = new MsgpackTimestamp(view.getUint32(0));
    } else if (data.length === 8) {
      const high = view.getUint32(0);
      const nanoseconds = high >>> 2;
      if (nanoseconds >= NANOS_PER_SECOND) return `timestamp nanoseconds ${nanoseconds} out of range 0..999999999`;
      timestamp = new MsgpackTimestamp((high & 0x3) * 0x1_0000_0000 + view.getUint32(4), nanoseconds);
    } else if (data.length === 12) {
      const nanoseconds = view.getUint32(0);
      if (nanoseconds >= NANOS_PER_SECOND) return `timestamp nanoseconds ${nanoseconds} out of range 0..999999999`;
      timestamp = new MsgpackTimestamp(view.getBigInt64(4), nanoseconds);
    } else {
      return `a timestamp (extension -1) of ${data.length} bytes: the formats are 4, 8 or 12 bytes`;
    }
    timestamp.#width = data.length;
    return timestamp;
  }

  /** @internal The data bytes: the format it came in when that still holds it, else the smallest that does. */
  toBytes(): Uint8Array {
    const s = this.seconds;
    const fits32 = this.nanoseconds === 0 && s >= 0 && s <= 0xffff_ffff;
    const fits64 = s >= 0 && s < 0x4_0000_0000;
    const width = (this.#width === 4 && fits32) || (this.#width === 8 && fits64) || this.#width === 12 ? this.#width : fits32 ? 4 : fits64 ? 8 : 12;
    const out = new Uint8Array(width);
    const view = new DataView(out.buffer);
    if (width === 4) {
      view.setUint32(0, Number(s));
    } else if (width === 8) {
      const n = Number(s);
      view.setUint32(0, this.nanoseconds * 4 + Math.floor(n / 0x1_0000_0000));
      view.setUint32(4, n >>> 0);
    } else {
      view.setUint32(0, this.nanoseconds);
      view.setBigInt64(4, BigInt(s));
    }
    return out;
  }
}

/**
 * A MessagePack extension value of any type code other than -1 (the timestamp): its type
 * (-128..127) and its bytes, kept as they came and written back with the same type and bytes.
 *
 * @example
 * const point = new MsgpackExt(7, new Uint8Array([0x70, 0x71, 0x72]));
 * await mesh.request("echo", { point }); // answers { point: MsgpackExt { type: 7, data: [112, 113, 114] } }
 */
export class MsgpackExt {
  readonly type: number;
  readonly data: Uint8Array;

  constructor(type: number, data: Uint8Array) {
    if (!Number.isInteger(type) || type < -128 || type > 127) throw new RangeError(`extension type must be an integer -128..127, got ${type}`);
    if (type === -1) throw new RangeError("extension type -1 is the timestamp: use MsgpackTimestamp");
    if (!(data instanceof Uint8Array)) throw new TypeError("extension data must be a Uint8Array");
    this.type = type;
    this.data = data;
    Object.freeze(this);
  }

  /** The gateway's JSON form (docs/protocol.md §7). */
  toJSON(): { $ext: { type: number; base64: string } } {
    return { $ext: { type: this.type, base64: Buffer.from(this.data.buffer, this.data.byteOffset, this.data.byteLength).toString("base64") } };
  }
}

/**
 * @internal What a decoder puts where the bytes hold a value JavaScript cannot be given (a
 * timestamp with 1,000,000,000 nanoseconds, a map keyed by an array, the reserved byte 0xc1).
 * The payload check (`checkPayload` in mesh/frames.ts) refuses it with code 2 naming its
 * path, so the envelope around it is still answered, correlated, and acknowledged.
 */
export class UnreadableValue {
  constructor(readonly reason: string) {
    Object.freeze(this);
  }
}

/**
 * Reads the one MessagePack string whose header is at `start` of `buffer` (bytes up to `end`
 * belong to the body being decoded): msgpackr's string reader in this process, in place of its
 * native extractor (msgpackr-extract, an N-API addon that reads every string of a body in one
 * call). ASCII text is Buffer's latin1Slice, anything else its utf8Slice (invalid bytes become
 * U+FFFD, as msgpackr's own reader makes them). Measured in place, two pairs each: a sink's CPU
 * per event 1.81 and 1.72 us with the addon, 1.60 and 1.63 with this; per pipelined request 4.14
 * and 4.15 against 3.90 and 3.87; a request across cores spends less between a frame's arrival and
 * its decoded envelope, and an actor never loads the addon (docs/benchmarks.md). Throws where it
 * does not read (not a string header, a string past `end`): msgpackr then reads it itself.
 *
 * @example
 * readStringAt(0, 3, Uint8Array.of(0xa2, 0x68, 0x69).buffer); // "hi"
 */
export function readStringAt(start: number, end: number, buffer: ArrayBuffer): string {
  if (buffer !== lastBuffer) {
    // A big frame's own buffer is not kept past its decoding: read through a view of its own.
    if (buffer.byteLength > KEPT_BUFFER_BYTES) return readStringIn(Buffer.from(buffer) as SlicingBuffer, start, end);
    lastBuffer = buffer;
    lastBytes = Buffer.from(buffer) as SlicingBuffer;
  }
  return readStringIn(lastBytes, start, end);
}

function readStringIn(bytes: SlicingBuffer, start: number, end: number): string {
  const token = bytes[start]!;
  let at: number, length: number;
  if (token >= 0xa0 && token <= 0xbf) {
    length = token & 0x1f;
    at = start + 1;
  } else if (token === 0xd9) {
    length = bytes[start + 1]!;
    at = start + 2;
  } else if (token === 0xda) {
    length = (bytes[start + 1]! << 8) | bytes[start + 2]!;
    at = start + 3;
  } else if (token === 0xdb) {
    length = bytes.readUInt32BE(start + 1);
    at = start + 5;
  } else {
    throw NOT_READ;
  }
  const stop = at + length;
  if (stop > end) throw NOT_READ;
  return sliceText(bytes, at, stop);
}

/**
 * The UTF-8 text of `bytes[at..stop)`: for a short text, latin1Slice when it is all ASCII (the
 * common case, and the cheaper call); else utf8Slice, which reads invalid bytes as U+FFFD as
 * msgpackr does.
 * @internal: for the envelope codec (mesh/codecs.ts).
 */
export function sliceText(bytes: SlicingBuffer, at: number, stop: number): string {
  // Past 32 bytes utf8Slice's own check is quicker than this loop (120 ASCII bytes: 63 ns against 87; 12: 38 against 32).
  if (stop - at > 32) return bytes.utf8Slice(at, stop);
  for (let i = at; i < stop; i++) if (bytes[i]! > 0x7f) return bytes.utf8Slice(at, stop);
  return bytes.latin1Slice(at, stop);
}

/** Buffer's slicing methods (Bun's, Node's and Deno's; not in the typings). */
export type SlicingBuffer = Buffer & { latin1Slice(start: number, end: number): string; utf8Slice(start: number, end: number): string };

const NOT_READ = new Error("not a string this reader reads: msgpackr reads it");
/** The ArrayBuffer of the last call and a Buffer over all of it: frames are read from one long-lived buffer (frames.ts LANDING_BYTES). */
let lastBuffer: ArrayBuffer | undefined;
let lastBytes = Buffer.alloc(0) as SlicingBuffer;
export const KEPT_BUFFER_BYTES = 1024 * 1024; // a frame buffer bigger than this is not held past its decoding (codecs.ts too)

/**
 * Set by the actor host's bundle (src/supervisor/actor-host-bundle.ts), whose `msgpackr-extract`
 * hands msgpackr readStringAt: msgpackr installs it itself there.
 */
export const STRINGS_IN_BUNDLE = Symbol.for("hermes-mesh.msgpackr-strings");

/**
 * Gives msgpackr readStringAt as its string reader when this process runs from source: msgpackr
 * (node-index.js) has installed msgpackr-extract's by then, and its `setExtractor` is not
 * exported, so it is taken from the module file every import of msgpackr shares. Where that
 * fails (another layout, a runtime without Buffer's slicing) msgpackr keeps its own reader.
 * Runs at import; true when the reader is msgpackr's. @internal: exported for its test.
 */
export function useOwnStringReader(): boolean {
  if ((globalThis as Record<symbol, unknown>)[STRINGS_IN_BUNDLE]) return true;
  if (typeof lastBytes.latin1Slice !== "function") return false;
  try {
    const require = createRequire(import.meta.url);
    // Its package's folder (the entry require resolves, dist/node.cjs, is one down), not import.meta.resolve: a CommonJS bundle has none.
    let root = dirname(require.resolve("msgpackr"));
    while (!existsSync(join(root, "unpack.js")) && dirname(root) !== root) root = dirname(root);
    const msgpackrReader = require(join(root, "unpack.js")) as { Unpackr?: unknown; setExtractor?(read: typeof readStringAt): void };
    // Not the msgpackr this process decodes with (a bundle, another copy): that one keeps its reader.
    if (msgpackrReader.Unpackr !== Unpackr || typeof msgpackrReader.setExtractor !== "function") return false;
    msgpackrReader.setExtractor(readStringAt);
    return true;
  } catch {
    return false; // msgpackr's own reader stays
  }
}
useOwnStringReader();

/** True while a frame codec decodes: extensions then read as the classes above. */
let exact = false;

/**
 * Decodes with msgpackr so that every extension type reads exactly: timestamps as
 * MsgpackTimestamp, other codes as MsgpackExt (undefined for msgpackr's own `d4 00 00`).
 */
export function unpackExact(unpackr: Unpackr, bytes: Uint8Array, start: number, end: number): unknown {
  exact = true;
  try {
    return unpackr.unpack(bytes, { start, end });
  } finally {
    exact = false;
  }
}

/**
 * Turns the maps of a freshly decoded value (decoders run with `mapsAsObjects: false`, so every
 * MessagePack map arrives as a `Map`) into what handlers get: a plain object when every key is a
 * string, and a `Map` otherwise, so that keys that are numbers, booleans, nil, binary, timestamps
 * or extensions keep their type and are written back as they came. A map with a key `__proto__`
 * stays a `Map` too: as an object's field that name would be the prototype, or be renamed by
 * msgpackr's records. A key that is an array or a map is unreadable: the payload check refuses
 * it with code 2 naming its path. Changes `value` in place; stops `levelsLeft` down,
 * where the payload check refuses what nests deeper.
 */
export function settleDecodedMaps(value: unknown, levelsLeft: number): unknown {
  if (typeof value !== "object" || value === null || levelsLeft === 0) return value;
  const kind = value.constructor;
  if (kind === Object) {
    const fields = value as Record<string, unknown>;
    for (const key in fields) {
      const field = fields[key];
      if (typeof field === "object" && field !== null) fields[key] = settleDecodedMaps(field, levelsLeft - 1);
    }
    return value;
  }
  if (kind === Array) {
    const items = value as unknown[];
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (typeof item === "object" && item !== null) items[i] = settleDecodedMaps(item, levelsLeft - 1);
    }
    return value;
  }
  if (kind !== Map) return value;
  const map = value as Map<unknown, unknown>;
  let keys: "strings" | "other" = "strings";
  let i = 0;
  for (const key of map.keys()) {
    i++;
    if (typeof key === "string") {
      if (key === "__proto__") keys = "other";
      continue;
    }
    if (typeof key === "object" && key !== null && (Array.isArray(key) || key.constructor === Map || key.constructor === Object)) {
      return new UnreadableValue(`map key ${i} is ${Array.isArray(key) ? "an array" : "a map"}: map keys must be scalars`);
    }
    keys = "other";
  }
  if (keys === "other") {
    for (const [key, field] of map) if (typeof field === "object" && field !== null) map.set(key, settleDecodedMaps(field, levelsLeft - 1));
    return map;
  }
  const object: Record<string, unknown> = {};
  for (const [key, field] of map) {
    object[key as string] = typeof field === "object" && field !== null ? settleDecodedMaps(field, levelsLeft - 1) : field;
  }
  return object;
}

/** Property names msgpackr makes of keys that were not strings (or of `__proto__`), besides those starting with a digit or `-`. */
const TEXTED_KEYS: ReadonlySet<string> = new Set(["true", "false", "null", "undefined", "NaN", "Infinity", "__proto_"]);

/**
 * True when a value msgpackr decoded with `mapsAsObjects` may have lost a key's type: some
 * object has a key that a number, a boolean or nil would have become (it starts with a digit or
 * `-`, or is `true`, `false`, `null`, …) or `__proto_` (what msgpackr makes of `__proto__`).
 * Keys of real payloads almost never look so, and then the plain codec keeps msgpackr's fast
 * reading; else it reads the body again with every map as a Map (settleDecodedMaps).
 */
export function mayHaveTextedKeys(value: unknown, levelsLeft: number): boolean {
  if (typeof value !== "object" || value === null || levelsLeft === 0) return false;
  const kind = value.constructor;
  if (kind === Array) {
    const items = value as unknown[];
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (typeof item === "object" && item !== null && mayHaveTextedKeys(item, levelsLeft - 1)) return true;
    }
    return false;
  }
  if (kind !== Object) return false;
  const fields = value as Record<string, unknown>;
  for (const key in fields) {
    const c = key.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 45 || TEXTED_KEYS.has(key)) return true;
    const field = fields[key];
    if (typeof field === "object" && field !== null && mayHaveTextedKeys(field, levelsLeft - 1)) return true;
  }
  return false;
}

/**
 * Sets an own field, also one named `__proto__` (an assignment would set the prototype instead).
 *
 * @example
 * setOwn(copy, key, value); // where key may come from the wire
 */
export function setOwn(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}

/**
 * One extension value, read exactly. `fixext1` says it came as a fixext 1: `d4 00 00` (type 0,
 * byte 0) is msgpackr's encoding of undefined, which stays undefined so that a JavaScript peer's
 * undefined survives and those three bytes go back unchanged.
 */
export function readExtension(type: number, data: Uint8Array, fixext1: boolean): unknown {
  if (type === -1) {
    const timestamp = MsgpackTimestamp.fromBytes(data);
    return typeof timestamp === "string" ? new UnreadableValue(timestamp) : timestamp;
  }
  if (type === 0 && fixext1 && data[0] === 0) return undefined;
  return new MsgpackExt(type, new Uint8Array(data));
}

/** How msgpackr's own extensions read outside a frame codec (its unpack.js, reproduced). */
function msgpackrReading(type: number, data: Uint8Array | undefined): unknown {
  switch (type) {
    case 0:
      return undefined;
    case 0xff:
      return dateOf(data!);
    case 0x42:
      return bigIntOf(data!);
    case 0x74: {
      const Typed = TYPED_ARRAYS[data![0]!];
      const buffer = Uint8Array.prototype.slice.call(data, 1).buffer;
      if (Typed) return new Typed(buffer);
      if (data![0] === 16) return buffer;
      if (data![0] === 17) return new DataView(buffer);
      throw new Error(`Could not find typed array for code ${data![0]}`);
    }
    default:
      return new MsgpackExt(type > 127 ? type - 256 : type, new Uint8Array(data!));
  }
}

const TYPED_ARRAYS = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array];
const ERRORS: Record<string, ErrorConstructor> = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };

function dateOf(data: Uint8Array): Date {
  const timestamp = MsgpackTimestamp.fromBytes(data);
  if (typeof timestamp === "string") return new Date(Number.NaN);
  return new Date(Number(timestamp.seconds) * 1000 + timestamp.nanoseconds / 1_000_000);
}

function bigIntOf(data: Uint8Array): bigint {
  let value = BigInt.asIntN(8, BigInt(data[0] ?? 0));
  for (let i = 1; i < data.length; i++) value = (value << 8n) | BigInt(data[i]!);
  return value;
}

/** msgpackr's tag extensions (fixext 1 followed by one value), read outside a frame codec. */
const TAG_READERS: Record<number, (value: any) => unknown> = {
  0x73: (items: unknown[]) => new Set(items),
  0x78: (parts: [string, string]) => new RegExp(parts[0], parts[1]),
  0x65: (parts: [string, string, unknown, unknown[]?]) => {
    if (parts[0] === "AggregateError") return new AggregateError(parts[3] ?? [], parts[1], { cause: parts[2] });
    const Known = ERRORS[parts[0]];
    if (Known) return new Known(parts[1], { cause: parts[2] });
    const error = new Error(parts[1], { cause: parts[2] });
    error.name = parts[0];
    return error;
  },
};

// Writing: an extension registered with a Class takes precedence over msgpackr's built-in ones.
// addExtension requires a `type`, and also installs the object as that type's reader: the loop
// below, run after, replaces every reader.
addExtension({
  Class: MsgpackExt,
  type: 1,
  unpack: undefined,
  pack: ((ext: MsgpackExt, allocate: Allocate) => writeExtension(ext.type, ext.data, allocate)) as never,
});
addExtension({
  Class: MsgpackTimestamp,
  type: 0xff,
  unpack: undefined,
  pack: ((timestamp: MsgpackTimestamp, allocate: Allocate) => writeExtension(-1, timestamp.toBytes(), allocate)) as never,
});
addExtension({
  Class: UnreadableValue,
  type: 0xc1,
  unpack: undefined,
  pack: ((value: UnreadableValue) => {
    throw new Error(value.reason);
  }) as never,
});

// msgpackr calls an extension as `ext(data)` for fixext 1, after consulting `ext.read` (then it
// reads the next value for it) and `ext.noBuffer`; as `ext(data, readAt)` for every other size.
// The getters make the tag extensions behave as msgpackr's own outside a frame codec only.
for (let code = 0; code < 256; code++) {
  const type = code > 127 ? code - 256 : code;
  const unpack = function (data?: Uint8Array): unknown {
    // The argument count is how msgpackr's call tells fixext 1 apart.
    if (exact) return readExtension(type, data!, arguments.length === 1);
    return msgpackrReading(code, data);
  };
  if (code === 0) Object.defineProperty(unpack, "noBuffer", { get: () => !exact });
  const tag = TAG_READERS[code];
  if (tag) Object.defineProperty(unpack, "read", { get: () => (exact ? undefined : tag) });
  addExtension({ type: code, unpack });
}

type Allocate = (size: number) => { target: Uint8Array; position: number };

/** An extension header and data, written in the smallest form that holds its length. */
function writeExtension(type: number, data: Uint8Array, allocate: Allocate): void {
  const n = data.length;
  const code = type & 0xff;
  // Two fixext forms mean something else to msgpackr's decoders, so those values go as ext 8:
  // d4/d5 followed by 0x72 start a record definition, and d4 00 00 is undefined.
  const fixed = (code === 0x72 && n <= 2) || (code === 0 && n === 1 && data[0] === 0) ? undefined : FIXEXT[n];
  const header = fixed !== undefined ? 2 : n < 0x100 ? 3 : n < 0x10000 ? 4 : 6;
  const { target, position } = allocate(header + n);
  let at = position;
  if (fixed !== undefined) {
    target[at++] = fixed;
  } else if (n < 0x100) {
    target[at++] = 0xc7;
    target[at++] = n;
  } else if (n < 0x10000) {
    target[at++] = 0xc8;
    target[at++] = n >> 8;
    target[at++] = n & 0xff;
  } else {
    target[at++] = 0xc9;
    target[at++] = n >>> 24;
    target[at++] = (n >> 16) & 0xff;
    target[at++] = (n >> 8) & 0xff;
    target[at++] = n & 0xff;
  }
  target[at++] = code;
  target.set(data, at);
}

const FIXEXT: Record<number, number> = { 1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8 };

/**
 * msgpackr writes an integer beyond 32 bits as a float64, which typed peers (Python, Go) read as
 * a float where the sender wrote an int. Every integral number up to 2^53 beyond 32 bits, in the
 * frame's fields and anywhere in the payload, goes out as BigInt instead, which msgpackr writes as
 * int64. Copies only what changes: a payload without such numbers is passed on as it is.
 */
export function integersAsInt64(value: unknown, levelsLeft: number): unknown {
  if (typeof value === "number") {
    return (value > 0xffffffff || value < -0x80000000) && Number.isInteger(value) && value <= 2 ** 53 && value >= -(2 ** 53) ? BigInt(value) : value;
  }
  if (typeof value !== "object" || value === null || levelsLeft === 0) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const field = value[i];
      if (typeof field !== "number" && typeof field !== "object") continue;
      const item = integersAsInt64(field, levelsLeft - 1);
      if (item !== field) (copy ??= value.slice())[i] = item;
    }
    return copy ?? value;
  }
  const kind = value.constructor;
  if (kind === Map) {
    // A Map's keys are written as they are: numbers past 32 bits among them too.
    let changed = false;
    const entries = [...(value as Map<unknown, unknown>)].map(([key, field]) => {
      const entry = [integersAsInt64(key, 1), integersAsInt64(field, levelsLeft - 1)] as const;
      changed ||= entry[0] !== key || entry[1] !== field;
      return entry;
    });
    return changed ? new Map(entries) : value;
  }
  if (kind !== Object && kind !== undefined) return value;
  let copy: Record<string, unknown> | undefined;
  for (const key in value) {
    const field = (value as Record<string, unknown>)[key];
    if (typeof field !== "number" && typeof field !== "object") continue;
    const item = integersAsInt64(field, levelsLeft - 1);
    if (item !== field) setOwn((copy ??= { ...value }), key, item);
  }
  return copy ?? value;
}
