/**
 * Stream baseline: length-prefixed 128-byte frames written in batches to a plain Bun Unix
 * socket; the child (bench/fixtures/raw-sink-fixture.ts) counts frames and answers each read
 * with the cumulative count, so a burst ends, as hermes' does, when the receiver has
 * acknowledged every frame (bench/lib/raw-frames.ts).
 */
import { join } from "node:path";
import { spawnFixture } from "../lib/child.ts";
import { RAW_FRAME_BYTES, RawFrameSender } from "../lib/raw-frames.ts";
import type { PeerEnv, StreamPeer, StreamSession } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/raw-sink-fixture.ts");

export const rawStream: StreamPeer = {
  name: "raw socket",
  async open({ dir, placement }: PeerEnv): Promise<StreamSession> {
    const path = join(dir, `raw-sink-cpu${placement.childCpu ?? "all"}.sock`);
    const fixture = await spawnFixture(FIXTURE, [path], placement);
    try {
      const sender = new RawFrameSender();
      const socket = await Bun.connect({ unix: path, socket: sender.handlers() });
      sender.attach(socket);
      return {
        frameBytes: RAW_FRAME_BYTES,
        send: (n) => sender.send(n),
        async received() {
          return Number(await fixture.ask("count"));
        },
        async [Symbol.asyncDispose]() {
          socket.end();
          await fixture[Symbol.asyncDispose]();
        },
      };
    } catch (error) {
      await fixture[Symbol.asyncDispose]();
      throw error;
    }
  },
};
