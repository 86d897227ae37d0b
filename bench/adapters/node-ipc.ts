/**
 * Ping-pong and stream peer, Node's child_process IPC, both processes under Node 20: a Node
 * parent (bench/fixtures/node-ipc-parent-fixture.mjs) `fork()`s a Node child and they talk
 * with `child.send` / `process.send` and `process.on("message")`, JSON serialization (Node's
 * default, and the faster one measured for a 128-byte string: p50 16 us against 17 us same core,
 * 171 k against 99 k one-message sends/s), as process-based actor libraries on Node do.
 *
 * Why a Node parent driven over stdin/stdout rather than the pair under Bun: Bun's own
 * node:child_process `fork` would measure Bun's IPC implementation again, not Node's. The
 * harness cannot be the Node parent, so it drives one with the fixture line protocol and:
 * - round trips are timed inside the Node parent, in batches (`roundTrips(n)`), so the
 *   harness-to-parent hop is in no sample; `roundTrip()` (one request, for tests) is driven
 *   over that line protocol and answered by the Node child;
 * - a stream burst is timed here around `send <n>`: the one extra line round trip (tens of us)
 *   is under 0.1% of a burst (at least 10,000 messages).
 * Placement: the Node parent runs where the harness does (cpu 0), its child on the placement's
 * cpu (moved there with taskset after the fork, checked in /proc); "both cores": both unpinned.
 */
import { join } from "node:path";
import { spawnFixture, type Fixture } from "../lib/child.ts";
import { allowedCpus, BOTH_CORES, pinProcess, type Placement } from "../lib/placement.ts";
import { jsonLineBytes, TEXT_128 } from "../lib/text-payload.ts";
import type { PeerEnv, RoundTripPeer, RoundTripSession, StreamPeer, StreamSession } from "./types.ts";

const PARENT = join(import.meta.dir, "../fixtures/node-ipc-parent-fixture.mjs");
/** Where the harness runs (bench/cli.ts pins itself to cpu 0): the Node parent goes there. */
const HARNESS_CPU: Placement = { name: "harness cpu", childCpu: 0 };

const unavailable = () => (Bun.which("node") ? undefined : "node not found on PATH (Node.js 20 or later: https://nodejs.org, or Debian/Ubuntu: apt-get install nodejs)");

/** The Node parent on the harness's cpu, its forked child on the placement's. */
async function openPair(placement: Placement, args: string[]): Promise<Fixture> {
  const node = Bun.which("node");
  if (!node) throw new Error("node not found");
  const parentPlacement = placement === BOTH_CORES || placement.childCpu === undefined ? placement : HARNESS_CPU;
  const fixture = await spawnFixture(PARENT, args, parentPlacement, undefined, { runtime: node });
  try {
    const childPid = Number(fixture.info.childPid);
    if (placement.childCpu !== undefined && placement.childCpu !== HARNESS_CPU.childCpu) {
      if (!pinProcess(childPid, placement) || allowedCpus(childPid) !== String(placement.childCpu)) {
        throw new Error(`could not move the Node IPC child ${childPid} to cpu ${placement.childCpu}`);
      }
    }
    return fixture;
  } catch (error) {
    await fixture[Symbol.asyncDispose]();
    throw error;
  }
}

export const nodeIpcEcho: RoundTripPeer = {
  name: "Node IPC",
  unavailable,
  async open({ placement }: PeerEnv): Promise<RoundTripSession> {
    const fixture = await openPair(placement, ["echo"]);
    const roundTrips = async (n: number) => {
      const answer = await fixture.ask(`rt ${n}`, 60_000);
      const samples = answer.split(",").map(Number);
      if (samples.length !== n || samples.some((ns) => !(ns > 0))) throw new Error(`Node IPC parent answered 'rt ${n}' with '${answer.slice(0, 80)}'`);
      return samples;
    };
    return {
      async roundTrip() {
        await roundTrips(1);
      },
      roundTrips,
      [Symbol.asyncDispose]: () => fixture[Symbol.asyncDispose](),
    };
  },
};

/** The Node IPC stream with `batch` payloads per `send` (1: one message per send). */
export function nodeIpcStream(batch: number): StreamPeer {
  return {
    name: batch === 1 ? "Node IPC" : `Node IPC batch ${batch}`,
    unavailable,
    async open({ placement }: PeerEnv): Promise<StreamSession> {
      const fixture = await openPair(placement, ["sink", String(batch)]);
      return {
        frameBytes: batch === 1 ? jsonLineBytes(TEXT_128) : jsonLineBytes(Array.from({ length: batch }, () => TEXT_128)) / batch,
        async send(n) {
          const answer = await fixture.ask(`send ${n}`, 120_000);
          if (!(Number(answer) > 0)) throw new Error(`Node IPC parent answered 'send ${n}' with '${answer}'`);
        },
        async received() {
          return Number(await fixture.ask("count"));
        },
        [Symbol.asyncDispose]: () => fixture[Symbol.asyncDispose](),
      };
    },
  };
}
