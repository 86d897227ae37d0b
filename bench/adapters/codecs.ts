/**
 * Codec contenders: the three codecs hermes speaks (mesh/codecs.ts) and the JSON baseline
 * (JSON.stringify + TextEncoder, TextDecoder + JSON.parse).
 */
import { createEnvelopeCodec, createPlainCodec, createRecordsCodec } from "../../mesh/codecs.ts";
import type { CodecContender } from "./types.ts";

/** Plain msgpack maps: what every implementation must speak. */
export const plainMsgpack: CodecContender = {
  name: "msgpack plain",
  encoder: () => createPlainCodec().encode,
  decoder: () => createPlainCodec().decode,
};

/** msgpackr records, sequential: decoders must see the frames in encoding order. */
export const recordsMsgpack: CodecContender = {
  name: "msgpackr records",
  encoder: () => createRecordsCodec().encode,
  decoder: () => createRecordsCodec().decode,
};

/** hermes-envelope: the envelope's fields by hand, its payload in a records stream; sequential too. Encoded as a connection does (a view of the packer's buffer, as the others). */
export const envelopeCodec: CodecContender = {
  name: "hermes-envelope",
  encoder: () => {
    const codec = createEnvelopeCodec();
    return (value) => {
      const body = codec.encodeRange(value);
      return body.bytes.subarray(body.start, body.end);
    };
  },
  decoder: () => createEnvelopeCodec().decode,
};

/** The baseline every codec figure is compared with. */
export const json: CodecContender = {
  name: "JSON",
  encoder: () => {
    const text = new TextEncoder();
    return (value) => text.encode(JSON.stringify(value));
  },
  decoder: () => {
    const text = new TextDecoder();
    return (bytes) => JSON.parse(text.decode(bytes));
  },
};
