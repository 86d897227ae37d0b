import { decode } from "@msgpack/msgpack";

/**
 * Checks a frame body with an independent MessagePack implementation (@msgpack/msgpack): it
 * must decode to exactly `expected` (so no msgpackr extensions), and every integer of `expected`
 * must be a MessagePack int on the wire, not a float64 with an integral value (typed peers
 * would read a float where the protocol says int). Returns the problems found.
 */
export function referenceProblems(body: Uint8Array, expected: unknown): string[] {
  const problems: string[] = [];
  let loose: unknown;
  let strict: unknown;
  try {
    loose = decode(body);
    strict = decode(body, { useBigInt64: true });
  } catch (error) {
    return [`@msgpack/msgpack cannot decode it: ${error}`];
  }
  if (!Bun.deepEquals(loose, expected, true)) problems.push("@msgpack/msgpack decodes it to something else");
  compareIntegers(strict, expected, "$", problems);
  return problems;
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
