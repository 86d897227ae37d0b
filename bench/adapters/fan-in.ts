/**
 * Fan-in contenders: N sender processes streaming at once to one receiver process, each
 * sender's burst ending when the receiver acknowledged all of it.
 * - hermes: each sender dials the receiver's listener and sends event envelopes through
 *   `Connection.send` (bench/fixtures/hermes-sender-fixture.ts); the receiver
 *   (hermes-sink-fixture.ts) settles each envelope, one cumulative ack per tick and connection.
 * - raw socket (baseline): length-prefixed frames in batches (raw-sender-fixture.ts) to a raw
 *   sink answering each read with the connection's cumulative count (raw-sink-fixture.ts).
 * Every process starts on this process's cpus; the scenario moves them.
 */
import { join } from "node:path";
import { createCodec, CodecName } from "../../mesh/codecs.ts";
import { createEvent } from "../../mesh/envelope.ts";
import { spawnFixture, type Fixture } from "../lib/child.ts";
import { PAYLOAD_128 } from "../lib/payload.ts";
import { UNPINNED } from "../lib/placement.ts";
import { RAW_FRAME_BYTES } from "../lib/raw-frames.ts";
import type { FaninPeer, FaninSession } from "./types.ts";

const FIXTURES = join(import.meta.dir, "../fixtures");
/** The receiver's credit window (the default). */
const WINDOW = 4096;

function faninPeer(name: string, sink: string, sinkArgs: string[], sender: string, senderArgs: (path: string, i: number) => string[], frameBytes: number): FaninPeer {
  return {
    name,
    async open({ dir, senders }): Promise<FaninSession> {
      const path = join(dir, `${name.replace(/\W+/g, "-")}-sink-${Math.random().toString(36).slice(2, 8)}.sock`);
      const processes: Fixture[] = [];
      const close = () => Promise.allSettled([...processes].reverse().map((f) => f[Symbol.asyncDispose]()));
      try {
        const receiver = await spawnFixture(join(FIXTURES, sink), [path, ...sinkArgs], UNPINNED);
        processes.push(receiver);
        const sending = await Promise.all(Array.from({ length: senders }, (_, i) => spawnFixture(join(FIXTURES, sender), senderArgs(path, i), UNPINNED)));
        processes.push(...sending);
        return {
          pids: processes.map((p) => p.pid),
          frameBytes,
          async burst(n, count) {
            if (count > sending.length) throw new RangeError(`${name}: ${count} senders asked of ${sending.length}`);
            await Promise.all(sending.slice(0, count).map((s) => s.ask(`send ${n}`, 120_000)));
          },
          async received() {
            return Number(await receiver.ask("count"));
          },
          [Symbol.asyncDispose]: async () => void (await close()),
        };
      } catch (error) {
        await close();
        throw error;
      }
    },
  };
}

/** Wire bytes of one hermes event envelope once the codec's state is warm. */
function hermesFrameBytes(): number {
  const codec = createCodec(CodecName.MSGPACKR_RECORDS);
  const sample = () => ({ ...createEvent("sender-0", { target_agent: "sink" }, PAYLOAD_128), seq: 100_000 });
  codec.encode(sample());
  return 4 + codec.encode(sample()).length;
}

export const hermesFanin: FaninPeer = faninPeer(
  "hermes window 4096", "hermes-sink-fixture.ts", [String(WINDOW)], "hermes-sender-fixture.ts", (path, i) => [path, String(WINDOW), `sender-${i}`], hermesFrameBytes(),
);

export const rawFanin: FaninPeer = faninPeer("raw socket", "raw-sink-fixture.ts", [], "raw-sender-fixture.ts", (path) => [path], RAW_FRAME_BYTES);
