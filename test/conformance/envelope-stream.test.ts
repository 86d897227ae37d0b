import { describe, expect, test } from "bun:test";
import { createEnvelopeCodec } from "../../mesh/codecs.ts";
import { FrameDecoder } from "../../mesh/frames.ts";
import { isValidEnvelope } from "../../mesh/envelope.ts";
import { buildEnvelopeStream, STREAM_PATH, type StreamFile } from "./generate-envelope-stream.ts";
import { hexToBytes } from "./vector-format.ts";

const file: StreamFile = await Bun.file(STREAM_PATH).json();

describe("hermes-envelope-stream.json", () => {
  test("is what generate-envelope-stream.ts produces (regenerate after changing a frame)", () => {
    expect(file).toEqual(JSON.parse(JSON.stringify(buildEnvelopeStream())));
  });

  test("is listed in docs/protocol.md, frame by frame", async () => {
    const doc = await Bun.file(new URL("../../docs/protocol.md", import.meta.url).pathname).text();
    for (const frame of file.frames) expect(doc).toContain(`| \`${frame.name}\` |`);
  });

  test("decodes in order, through FrameDecoder and the codec, to each frame's value with its keys in order", () => {
    const codec = createEnvelopeCodec();
    const decoder = new FrameDecoder();
    const got: unknown[] = [];
    // The whole stream in one chunk, as a socket may deliver it.
    decoder.push(Buffer.concat(file.frames.map((f) => hexToBytes(f.hex))), (buffer, start, end) => got.push(codec.decode(buffer, start, end)));
    expect(got).toEqual(file.frames.map((f) => f.decoded));
    expect(got.map((v) => Object.keys(v as object))).toEqual(file.frames.map((f) => Object.keys(f.decoded)));
    expect(got.filter((v) => (v as { message_type: string }).message_type !== "ack" && (v as { message_type: string }).message_type !== "ping").every(isValidEnvelope)).toBe(true);
  });

  test("the codec writes each frame's value to the same bytes, in order", () => {
    const codec = createEnvelopeCodec();
    for (const frame of file.frames) {
      const body = codec.encode(frame.decoded);
      expect(Buffer.from(body).toString("hex")).toBe(frame.hex.slice(8));
    }
  });

  test("each frame decoded out of order breaks the records stream: the codec is stateful", () => {
    const codec = createEnvelopeCodec();
    const response = hexToBytes(file.frames.find((f) => f.name === "response")!.hex).subarray(4);
    expect(() => codec.decode(response)).toThrow();
  });
});
