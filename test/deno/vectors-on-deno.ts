/**
 * The conformance vectors (docs/conformance/vectors.json) checked on Deno: the checks of
 * test/conformance/vectors.test.ts that need neither bun:test nor the reference library, run
 * through the same mesh/ receive path (test/conformance/receive-frame.ts). Runtime-neutral
 * code only, so it runs on Bun too. Started by test/deno/vectors-deno.test.ts:
 *
 *   deno run --no-prompt --allow-read=docs/conformance/vectors.json \
 *     --allow-env=MSGPACKR_NATIVE_ACCELERATION_DISABLED test/deno/vectors-on-deno.ts
 *
 * (msgpackr reads that one variable when it loads.) Prints one JSON line,
 * `{"checked": n, "failures": [{ vector, check, problem }]}`, where n counts the checks made:
 * two per valid vector (decode, re-encode), one per invalid one (refused).
 */
import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { createPlainCodec } from "../../mesh/codecs.ts";
import { HermesError } from "../../mesh/errors.ts";
import { payloadFromJson, payloadToJson } from "../../src/gateway/invoke-forms.ts";
import { receiveFrame } from "../conformance/receive-frame.ts";
import { hexToBytes, type InvalidVector, type ValidVector, type VectorFile } from "../conformance/vector-format.ts";

const VECTORS_FILE = fileURLToPath(new URL("../../docs/conformance/vectors.json", import.meta.url));

interface Failure {
  vector: string;
  check: string;
  problem: string;
}

/** Every string anywhere in a decoded value, keys included (as in vectors.test.ts). */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (typeof value !== "object" || value === null || (value.constructor !== Object && !Array.isArray(value))) return [];
  return Object.entries(value).flatMap(([k, v]) => [...(Array.isArray(value) ? [] : [k]), ...strings(v)]);
}

const show = (value: unknown) => JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `${v}n` : v));

/** The checks by kind of vector, each returning a problem, or undefined when it holds. */
const checks: {
  valid: Record<string, (v: ValidVector) => string | undefined>;
  invalid: Record<string, (v: InvalidVector) => string | undefined>;
} = {
  valid: {
    // FrameDecoder, the plain codec and its validator give `decoded`, the frame type and the answer code.
    decode(vector) {
      const outcome = receiveFrame(hexToBytes(vector.hex));
      if (!outcome?.ok) return `rejected: ${outcome?.error.message ?? "incomplete frame"}`;
      if (outcome.frameType !== vector.frame_type) return `frame type ${outcome.frameType}, expected ${vector.frame_type}`;
      const json = payloadToJson(outcome.value);
      if (!isDeepStrictEqual(json, vector.decoded)) return `decoded to ${show(json)}`;
      if (outcome.answerCode !== vector.expect_error_code) return `answer code ${outcome.answerCode}, expected ${vector.expect_error_code}`;
    },
    // Every string is raw UTF-8 in the bytes, and the plain codec writes the same body.
    "re-encode"(vector) {
      const value = payloadFromJson(vector.decoded);
      const missing = strings(value).find((text) => !vector.hex.includes(Buffer.from(text, "utf8").toString("hex")));
      if (missing !== undefined) return `string ${show(missing)} is not in the bytes as raw UTF-8`;
      const body = Buffer.from(createPlainCodec().encode(value)).toString("hex");
      if (body !== vector.hex.slice(8)) return `re-encoded to ${body}`;
    },
  },
  invalid: {
    refused(vector) {
      const outcome = receiveFrame(hexToBytes(vector.hex));
      if (outcome === undefined || outcome.ok) return `accepted or incomplete: ${show(outcome?.ok && outcome.value)}`;
      if (!(outcome.error instanceof HermesError)) return `refused with ${outcome.error}, not a HermesError`;
      if (outcome.error.code !== vector.error_code) return `code ${outcome.error.code}, expected ${vector.error_code}`;
      if (outcome.stage !== vector.stage) return `at stage ${outcome.stage}, expected ${vector.stage}`;
    },
  },
};

/** Runs every check of one vector, counting each one made. */
function run<V>(vector: V & { name: string }, byName: Record<string, (v: V) => string | undefined>, failures: Failure[]): number {
  let checked = 0;
  for (const [check, fn] of Object.entries(byName)) {
    let problem: string | undefined;
    try {
      problem = fn(vector);
    } catch (error) {
      problem = `threw ${error instanceof Error ? error.stack ?? error.message : String(error)}`;
    }
    checked++;
    if (problem !== undefined) failures.push({ vector: vector.name, check, problem });
  }
  return checked;
}

const file: VectorFile = JSON.parse(readFileSync(VECTORS_FILE, "utf8"));
const failures: Failure[] = [];
let checked = 0;
for (const vector of file.vectors) checked += vector.valid ? run(vector, checks.valid, failures) : run(vector, checks.invalid, failures);
console.log(JSON.stringify({ checked, failures }));
