/**
 * The public msgpack-test-suite (npm msgpack-test-suite 1.0.0): every value, each in every
 * encoding the suite lists, with the JavaScript value hermes-mesh gives it (docs/protocol.md §3,
 * "payload values"): nil null, bool, bin Uint8Array, numbers, bignums as a number up to 2^53 and
 * BigInt beyond, strings, arrays, maps, timestamps MsgpackTimestamp, ext MsgpackExt.
 */
import { createRequire } from "node:module";
import { MsgpackExt, MsgpackTimestamp } from "../../mesh/msgpack-values.ts";

export const SUITE_PATH = createRequire(import.meta.url).resolve("msgpack-test-suite");

type SuiteCase = Record<string, any> & { msgpack: string[] };

export interface SuiteEncoding {
  /** "<group file> <hex>", e.g. "50.timestamp.yaml d7-ff-…". */
  label: string;
  /** The encoding's bytes. */
  raw: Uint8Array;
  /** The value as hermes-mesh represents it. */
  expected: unknown;
}

export const hexBytes = (hex: string): Uint8Array => Uint8Array.from(Buffer.from(hex.replaceAll("-", ""), "hex"));

function expectedOf(c: SuiteCase): unknown {
  if ("nil" in c) return null;
  if ("bool" in c) return c.bool;
  if ("binary" in c) return hexBytes(c.binary);
  if ("bignum" in c) {
    const n = BigInt(c.bignum);
    return n >= -(2n ** 53n) && n <= 2n ** 53n ? Number(n) : n;
  }
  if ("number" in c) return c.number;
  if ("string" in c) return c.string;
  if ("array" in c) return c.array;
  if ("map" in c) return c.map;
  if ("timestamp" in c) return new MsgpackTimestamp(c.timestamp[0], c.timestamp[1]);
  if ("ext" in c) return new MsgpackExt(c.ext[0], hexBytes(c.ext[1]));
  throw new Error(`unknown suite case ${JSON.stringify(c)}`);
}

export async function suiteEncodings(): Promise<SuiteEncoding[]> {
  const suite: Record<string, SuiteCase[]> = await Bun.file(SUITE_PATH).json();
  return Object.entries(suite).flatMap(([group, cases]) =>
    cases.flatMap((c) => c.msgpack.map((hex) => ({ label: `${group} ${hex}`, raw: hexBytes(hex), expected: expectedOf(c) }))),
  );
}

/** A frame body `{ v: <the encoding's bytes as they are> }`. */
export function splicedPayload(raw: Uint8Array): Uint8Array {
  return new Uint8Array([0x81, 0xa1, 0x76, ...raw]);
}
