/**
 * Manual timing of the hot path's stages, in one process, in ns per envelope: what building,
 * encoding, framing, decoding and checking one 128-byte-payload envelope costs, and the
 * per-request bookkeeping of RequestChannel (promise, timer, AbortController). The sum
 * bounds what one core can do; a CPU profile (bench/profile.ts) shows the same from inside.
 *
 * Run: `bun bench/stages.ts [ms per stage]`.
 */
import { FrameDecoder } from "../mesh/frames.ts";
import { createCodec, CodecName } from "../mesh/codecs.ts";
import { isValidEnvelope, createEvent } from "../mesh/envelope.ts";
import { newMessageId } from "../mesh/ids.ts";
import { PAYLOAD_128 } from "./lib/payload.ts";

const ms = Number(process.argv[2] ?? 300);
const ROUTE = { target_agent: "sink" };
let sink = 0;

/** Calls `op(i)` for about `ms` (after a warm-up) and returns ns per call. */
function time(op: (i: number) => unknown): number {
  for (let i = 0; i < 20_000; i++) op(i);
  let calls = 0;
  const t0 = Bun.nanoseconds();
  const end = t0 + ms * 1e6;
  let now = t0;
  while (now < end) {
    for (let k = 0; k < 1024; k++) sink += op(calls + k) === undefined ? 0 : 1;
    calls += 1024;
    now = Bun.nanoseconds();
  }
  return (now - t0) / calls;
}

const N = 4096;
const envelopes = Array.from({ length: N }, (_, i) => ({ ...createEvent("bench-sender", ROUTE, PAYLOAD_128), seq: i + 1 }));
const encoder = createCodec(CodecName.MSGPACKR_RECORDS);
const frames = envelopes.map((e) => encoder.encode(e).slice());
const decoded = (() => {
  const decoder = createCodec(CodecName.MSGPACKR_RECORDS);
  return frames.map((f) => decoder.decode(f));
})();
// A 64 KiB-ish chunk of whole frames, as a socket read delivers them.
const chunk = (() => {
  const size = frames.slice(0, 256).reduce((n, f) => n + 4 + f.length, 0);
  const out = new Uint8Array(size);
  let at = 0;
  for (const f of frames.slice(0, 256)) {
    new DataView(out.buffer).setUint32(at, f.length);
    out.set(f, at + 4);
    at += 4 + f.length;
  }
  return out;
})();

let decoder = createCodec(CodecName.MSGPACKR_RECORDS);
const frameDecoder = new FrameDecoder();
const stages: Array<[string, number]> = [
  ["Date.now()", time(() => Date.now())],
  ["newMessageId() (monotonic ULID)", time(() => newMessageId())],
  ["createEvent() (ULID + object)", time(() => createEvent("bench-sender", ROUTE, PAYLOAD_128))],
  ["records encode", time((i) => encoder.encode(envelopes[i % N]!).length)],
  ["records encode + copy out (.slice)", time((i) => encoder.encode(envelopes[i % N]!).slice().length)],
  ["FrameDecoder.push, per frame (256-frame chunk)", time(() => frameDecoder.push(chunk, (_b, s, e) => (sink += e - s))) / 256],
  ["records decode (in order)", time((i) => {
    if (i % N === 0) decoder = createCodec(CodecName.MSGPACKR_RECORDS);
    return decoder.decode(frames[i % N]!);
  })],
  ["isValidEnvelope()", time((i) => isValidEnvelope(decoded[i % N]))],
  ["Promise.withResolvers + setTimeout + clearTimeout", time(() => {
    const r = Promise.withResolvers<void>();
    clearTimeout(setTimeout(r.resolve, 60_000));
    return r;
  })],
  ["AbortController + addEventListener('abort')", time(() => {
    const c = new AbortController();
    c.signal.addEventListener("abort", () => {}, { once: true });
    return c;
  })],
];
const width = Math.max(...stages.map(([name]) => name.length));
for (const [name, ns] of stages) console.log(`${name.padEnd(width)}  ${ns.toFixed(0).padStart(6)} ns  (${(1e9 / ns / 1e6).toFixed(2)} M/s)`);
if (sink === 0.5) console.log("unreachable");
