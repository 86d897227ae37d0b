import { decode, decodeTimestampToTimeSpec, ExtData, ExtensionCodec } from "@msgpack/msgpack";

/**
 * Checks a frame body with an independent MessagePack implementation (@msgpack/msgpack): it
 * must decode to exactly `expected` (so no msgpackr extensions), and every integer of `expected`
 * must be a MessagePack int on the wire, not a float64 with an integral value (typed peers
 * would read a float where the protocol says int). The values JSON lacks are compared in the
 * gateway's JSON forms (docs/protocol.md §7), as `decoded` holds them. Returns the problems found.
 */
export function referenceProblems(body: Uint8Array, expected: unknown): string[] {
  const problems: string[] = [];
  let strict: unknown;
  // @msgpack/msgpack gives plain objects only: a map with typed keys ($entries) reads with its keys as text.
  expected = keysAsText(expected);
  try {
    strict = decode(body, { useBigInt64: true, extensionCodec: TIMESTAMPS_AS_FORMS, mapKeyConverter: (key: unknown) => (typeof key === "string" || typeof key === "number" ? key : String(key)) } as never);
  } catch (error) {
    return [`@msgpack/msgpack cannot decode it: ${error}`];
  }
  if (!Bun.deepEquals(referenceJson(strict), expected, true)) problems.push("@msgpack/msgpack decodes it to something else");
  compareIntegers(strict, expected, "$", problems);
  return problems;
}

/** `{ $entries: [[key, value]] }` as the object a decoder with string keys makes of it. */
function keysAsText(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(keysAsText);
  if (typeof value !== "object" || value === null) return value;
  const form = value as Record<string, unknown>;
  if (Array.isArray(form.$entries) && Object.keys(form).length === 1) return Object.fromEntries((form.$entries as [unknown, unknown][]).map(([k, v]) => [String(k), keysAsText(v)]));
  return Object.fromEntries(Object.entries(form).map(([k, v]) => [k, keysAsText(v)]));
}

/** Timestamps (extension -1) as their JSON form, read by @msgpack/msgpack's own timestamp code. */
const TIMESTAMPS_AS_FORMS = new ExtensionCodec();
TIMESTAMPS_AS_FORMS.register({
  type: -1,
  encode: () => null,
  decode: (data) => {
    const { sec, nsec } = decodeTimestampToTimeSpec(data);
    return { $timestamp: { seconds: sec, nanoseconds: nsec } };
  },
});

/** @msgpack/msgpack's values in the JSON forms: BigInt past 2^53 as $bigint, bin as $bin, other extensions as $ext. */
export function referenceJson(value: unknown): unknown {
  if (typeof value === "bigint") return value >= -(2n ** 53n) && value <= 2n ** 53n ? Number(value) : { $bigint: value.toString() };
  if (value instanceof Uint8Array) return { $bin: Buffer.from(value).toString("base64") };
  if (value instanceof ExtData) return { $ext: { type: value.type, base64: Buffer.from(value.data as Uint8Array).toString("base64") } };
  if (Array.isArray(value)) return value.map(referenceJson);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, referenceJson(v)]));
  return value;
}

function compareIntegers(strict: unknown, expected: unknown, path: string, problems: string[]): void {
  if (typeof expected === "number") {
    // int64/uint64 decode as bigint here; 32-bit ints as numbers. A wide integer as a plain number was a float64.
    const wide = Number.isInteger(expected) && (expected > 0xffffffff || expected < -0x80000000);
    if (wide && typeof strict !== "bigint") problems.push(`${path}: integer ${expected} is not written as a MessagePack int`);
    return;
  }
  if (typeof expected !== "object" || expected === null || typeof strict !== "object" || strict === null) return;
  for (const [key, value] of Object.entries(expected)) {
    compareIntegers((strict as Record<string, unknown>)[key], value, `${path}.${key}`, problems);
  }
}
