/**
 * Codec contenders: the two MessagePack codecs hermes speaks (mesh/frames.ts) and the
 * JSON baseline (JSON.stringify + TextEncoder, TextDecoder + JSON.parse).
 */
import { createPlainCodec, createRecordsCodec } from "../../mesh/codecs.ts";
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
