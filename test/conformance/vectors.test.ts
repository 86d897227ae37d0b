import { describe, expect, test } from "bun:test";
import { decode as referenceDecode } from "@msgpack/msgpack";
import { FrameDecoder } from "../../mesh/frames.ts";
import { createPlainCodec } from "../../mesh/codecs.ts";
import { payloadFromJson, payloadToJson } from "../../src/gateway/invoke-forms.ts";
import { isValidEnvelope, parseEnvelope, EnvelopeSchema } from "../../mesh/envelope.ts";
import { HermesError } from "../../mesh/errors.ts";
import { buildVectorFile, VECTORS_PATH } from "./generate-vectors.ts";
import { mutateEnvelope } from "./mutate-envelope.ts";
import { receiveFrame } from "./receive-frame.ts";
import { referenceProblems } from "./reference-check.ts";
import { seededRandom } from "./seeded-random.ts";
import { hexToBytes, type ValidVector, type VectorFile } from "./vector-format.ts";

const file: VectorFile = await Bun.file(VECTORS_PATH).json();
const valid = file.vectors.filter((v): v is ValidVector => v.valid);
const invalid = file.vectors.filter((v) => !v.valid);
const bodyOf = (hex: string) => hexToBytes(hex).subarray(4);

/** Every string anywhere in a decoded value, keys included (not the fields of timestamps and extensions). */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (typeof value !== "object" || value === null || (value.constructor !== Object && !Array.isArray(value))) return [];
  return Object.entries(value).flatMap(([k, v]) => [...(Array.isArray(value) ? [] : [k]), ...strings(v)]);
}

describe("vectors.json", () => {
  test("is what generate-vectors.ts produces (regenerate after changing a case)", () => {
    expect(file).toEqual(JSON.parse(JSON.stringify(buildVectorFile())));
  });

  test("is listed in docs/protocol.md, vector by vector", async () => {
    const doc = await Bun.file(new URL("../../docs/protocol.md", import.meta.url).pathname).text();
    for (const vector of file.vectors) expect(doc).toContain(`| \`${vector.name}\` |`);
  });

  test("covers every case the protocol asks for, with unique names", () => {
    expect(new Set(file.vectors.map((v) => v.name)).size).toBe(file.vectors.length);
    expect(new Set(valid.map((v) => v.frame_type))).toEqual(new Set(["envelope", "hello", "ack", "ping", "pong"]));
    expect(new Set(invalid.map((v) => v.error_code))).toEqual(new Set([2, 6]));
    expect(valid.filter((v) => v.expect_error_code === 9).map((v) => v.decoded.ttl)).toEqual([0]);
    expect(file.vectors.every((v) => v.kind === "frame" && /^([0-9a-f]{2})+$/.test(v.hex))).toBe(true);
  });
});

describe.each(valid.map((v) => [v.name, v] as const))("valid vector %s", (_name, vector) => {
  const bytes = hexToBytes(vector.hex);

  test("decodes through FrameDecoder, the plain codec and its validator to `decoded`", () => {
    const outcome = receiveFrame(bytes);
    if (!outcome?.ok) throw new Error(`rejected: ${outcome?.error.message ?? "incomplete frame"}`);
    expect(outcome.frameType).toBe(vector.frame_type);
    expect(payloadToJson(outcome.value)).toEqual(vector.decoded);
    expect(outcome.answerCode).toBe(vector.expect_error_code);
  });

  test("decodes the same with the independent @msgpack/msgpack, integers as MessagePack ints", () => {
    expect(referenceProblems(bodyOf(vector.hex), vector.decoded)).toEqual([]);
  });

  test("holds every string as raw UTF-8 and re-encodes to the same bytes with the plain codec", () => {
    const value = payloadFromJson(vector.decoded);
    for (const text of strings(value)) expect(vector.hex).toContain(Buffer.from(text, "utf8").toString("hex"));
    expect(Buffer.from(createPlainCodec().encode(value)).toString("hex")).toBe(vector.hex.slice(8));
  });

  if (vector.frame_type === "envelope") {
    test("keeps every field, unknown ones included, through parseEnvelope", () => {
      expect(parseEnvelope(structuredClone(vector.decoded)) as unknown).toEqual(vector.decoded);
      if (vector.decoded.message_type === "error") {
        expect(HermesError.fromWire(vector.decoded).toPayload()).toEqual(vector.decoded.payload as never);
      }
    });
  }
});

describe.each(invalid.map((v) => [v.name, v] as const))("invalid vector %s", (_name, vector) => {
  test(`is refused with code ${vector.error_code} at stage ${vector.stage}`, () => {
    const outcome = receiveFrame(hexToBytes(vector.hex));
    if (outcome === undefined || outcome.ok) throw new Error(`accepted or incomplete: ${JSON.stringify(outcome?.ok && outcome.value)}`);
    expect(outcome.error).toBeInstanceOf(HermesError);
    expect(outcome.error.code).toBe(vector.error_code as never);
    expect(outcome.stage).toBe(vector.stage);
  });

  if (vector.partial_hex) {
    test("is refused from the header alone, holding almost nothing", () => {
      const decoder = new FrameDecoder(file.max_frame_bytes);
      expect(() => decoder.push(hexToBytes(vector.hex), () => {})).toThrow(HermesError);
      expect(decoder.bufferedBytes).toBeLessThanOrEqual(4);
    });
  }

  if (vector.stage === "decode") {
    test("is not one map for @msgpack/msgpack either", () => {
      let decoded: unknown;
      try {
        decoded = referenceDecode(bodyOf(vector.hex));
      } catch {
        return;
      }
      expect(typeof decoded === "object" && decoded !== null && !Array.isArray(decoded)).toBe(false);
    });
  }
});

describe("isValidEnvelope agrees with EnvelopeSchema", () => {
  const agree = (value: unknown, label: string) => {
    const fast = isValidEnvelope(value);
    const zod = EnvelopeSchema.safeParse(value).success;
    if (fast !== zod) throw new Error(`${label}: isValidEnvelope says ${fast}, EnvelopeSchema says ${zod}: ${Bun.inspect(value)}`);
    return fast;
  };

  test("on every decodable vector", () => {
    let compared = 0;
    for (const vector of file.vectors) {
      let value: unknown;
      try {
        value = createPlainCodec().decode(bodyOf(vector.hex));
      } catch {
        continue;
      }
      agree(value, vector.name);
      compared++;
    }
    expect(compared).toBeGreaterThan(30);
  });

  test("on 5,000 randomly mutated envelopes, as built and after a trip through MessagePack", () => {
    const random = seededRandom(0x5eed);
    const bases = valid.filter((v) => v.frame_type === "envelope").map((v) => v.decoded);
    const codec = createPlainCodec();
    const verdicts = { valid: 0, invalid: 0 };
    for (let i = 0; i < 5000; i++) {
      const mutated = mutateEnvelope(random.pick(bases), random);
      const label = `mutation ${i} (seed ${random.seed})`;
      verdicts[agree(mutated, label) ? "valid" : "invalid"]++;
      const onWire = codec.decode(codec.encode(mutated).slice());
      agree(onWire, `${label}, decoded`);
      if (!isValidEnvelope(onWire)) expect(() => parseEnvelope(onWire)).toThrow(HermesError);
    }
    // Both sides of the edge were exercised.
    expect(verdicts.valid).toBeGreaterThan(500);
    expect(verdicts.invalid).toBeGreaterThan(500);
  });
});
