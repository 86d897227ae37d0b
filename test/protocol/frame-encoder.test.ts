import { expect, test } from "bun:test";
import { FrameDecoder, encodeFrame } from "../../mesh/frames.ts";

test("encodeFrame writes a big-endian u32 length then the body", () => {
  const body = Uint8Array.from({ length: 0x0102 }, (_, i) => i & 0xff);
  const frame = encodeFrame(body);
  expect(Array.from(frame.subarray(0, 4))).toEqual([0, 0, 1, 2]);
  expect(frame.subarray(4)).toEqual(body);
});

test("encodeFrame copies the body, so a reused encode buffer cannot change it", () => {
  const body = new Uint8Array([0x80]);
  const frame = encodeFrame(body);
  body[0] = 0x90;
  expect(frame[4]).toBe(0x80);
});

test("FrameDecoder reads back what encodeFrame wrote", () => {
  const bodies = [new Uint8Array([0x80]), new TextEncoder().encode("你好")];
  const out: Uint8Array[] = [];
  new FrameDecoder().push(Buffer.concat(bodies.map(encodeFrame)), (b, s, e) => out.push(b.slice(s, e)));
  expect(out).toEqual(bodies);
});
