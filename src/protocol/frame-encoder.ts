/**
 * One frame as bytes: `u32be length` then the body. For one-off frames (tests, tools, other
 * implementations' vectors); connections write frames through their coalescing write queue.
 *
 * @example
 * encodeFrame(createPlainCodec().encode({ message_type: "ping" }));
 */
export function encodeFrame(body: Uint8Array): Uint8Array {
  const frame = new Uint8Array(4 + body.length);
  new DataView(frame.buffer).setUint32(0, body.length, false);
  frame.set(body, 4);
  return frame;
}
