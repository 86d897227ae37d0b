/**
 * Open-loop baseline: 128-byte requests on a plain Bun Unix socket to the raw echo child
 * (bench/fixtures/raw-echo-fixture.ts), any number outstanding. The stream is ordered, so
 * every 128 bytes that come back answer the oldest request still waiting.
 */
import { join } from "node:path";
import { spawnFixture } from "../lib/child.ts";
import { closedLoopRate, runOpenLoop } from "../lib/open-loop.ts";
import { RAW_128 } from "../lib/payload.ts";
import { RawWriter } from "../lib/raw-writer.ts";
import type { OpenLoopPeer, OpenLoopSession, PeerEnv } from "./types.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/raw-echo-fixture.ts");

export const rawPipelined: OpenLoopPeer = {
  name: "raw socket",
  async open({ dir, placement }: PeerEnv): Promise<OpenLoopSession> {
    const path = join(dir, `raw-pipelined-${Math.random().toString(36).slice(2, 8)}.sock`);
    const fixture = await spawnFixture(FIXTURE, [path], placement);
    // Waiting requests, oldest first: a ring of resolvers would do as well; an array with a head index is enough here.
    let waiting: Array<() => void> = [];
    let head = 0;
    let bytes = 0;
    try {
      let writer: RawWriter | undefined;
      const socket = await Bun.connect({
        unix: path,
        socket: {
          data(_socket, chunk) {
            bytes += chunk.length;
            while (bytes >= RAW_128.length && head < waiting.length) {
              bytes -= RAW_128.length;
              waiting[head++]!();
            }
            if (head > 4096 && head === waiting.length) (waiting = []), (head = 0);
          },
          drain: () => writer?.drain(),
        },
      });
      writer = new RawWriter(socket);
      const request = () => {
        const { promise, resolve } = Promise.withResolvers<void>();
        waiting.push(resolve);
        writer.write(RAW_128);
        return promise;
      };
      return {
        run: (spec) => runOpenLoop(request, spec),
        closedLoop: (concurrency, ms) => closedLoopRate(request, concurrency, ms),
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
