/**
 * The peers a user would pick instead of hermes-mesh, measured in the same run as hermes and
 * the raw baseline: Bun IPC, Node's child_process IPC, NATS (core, nats.js) and Redis Streams
 * (consumer group). A peer whose package, server or runtime is missing on this machine is left
 * out with one line saying why and how to install it, and the rest of the scenario runs.
 */
import { bunIpcEcho } from "./bun-ipc-echo.ts";
import { bunIpcStream } from "./bun-ipc-stream.ts";
import { natsRequest, natsStream } from "./nats.ts";
import { nodeIpcEcho, nodeIpcStream } from "./node-ipc.ts";
import { redisRequest, redisStream } from "./redis.ts";
import type { RoundTripPeer, StreamPeer } from "./types.ts";

/** Round-trip peers for the pingpong scenario. */
export const ROUND_TRIP_PEERS: readonly RoundTripPeer[] = [bunIpcEcho, nodeIpcEcho, natsRequest, redisRequest];

/** Stream peers for the stream scenario: the IPC channels one message per send and in arrays of 256. */
export const STREAM_PEERS: readonly StreamPeer[] = [bunIpcStream(1), bunIpcStream(256), nodeIpcStream(1), nodeIpcStream(256), natsStream, redisStream];

/**
 * The peers --quick leaves to the full run: Node IPC and Redis. Quick keeps the ones issue 13's
 * targets name (Bun IPC, NATS) beside the raw socket; every session open for the whole scenario
 * costs its start-up and a slice of each round.
 */
export const FULL_RUN_ONLY = /^(Node IPC|Redis)/;

/**
 * The peers that can run here, and one line for each that cannot (the scenario's `skipped`).
 * `quick` also leaves out the peers {@link FULL_RUN_ONLY} names, each with its line, unless
 * BENCH_PEERS chooses the contenders.
 *
 * @example
 * const { peers, skipped } = usable([hermesRequest, ...ROUND_TRIP_PEERS, rawEcho], "pingpong");
 * // skipped: ["pingpong: peer NATS request skipped: nats-server not found on PATH (Debian/Ubuntu: apt-get install nats-server; ...)"]
 */
export function usable<P extends { name: string; unavailable?(): string | undefined }>(peers: readonly P[], scenario: string, baseline?: P, quick = false): { peers: P[]; skipped: string[] } {
  const skipped: string[] = [];
  // BENCH_PEERS (a regular expression on peer names) runs only those contenders and the baseline:
  // every session stays open for the whole run, so fewer of them leave the machine quieter.
  const only = process.env.BENCH_PEERS ? new RegExp(process.env.BENCH_PEERS, "i") : undefined;
  const kept = peers.filter((peer) => {
    const asked = !only || peer === baseline || only.test(peer.name);
    // A peer BENCH_PEERS names is measured, in --quick too.
    const reason = !asked
      ? `not in BENCH_PEERS=${process.env.BENCH_PEERS}`
      : quick && !only && FULL_RUN_ONLY.test(peer.name)
        ? "measured in the full run only (--quick keeps Bun IPC and NATS)"
        : peer.unavailable?.();
    if (reason) skipped.push(`${scenario}: peer ${peer.name} skipped: ${reason}`);
    return !reason;
  });
  return { peers: kept, skipped };
}

/**
 * One line comparing each contender with hermes on one placement, as ratios:
 * "pingpong same core p50 against hermes request (21.0 us): Bun IPC 0.62x, NATS request 5.10x".
 */
export function versusHermes(scenario: string, placement: string, what: string, hermes: { name: string; value: number; text: string }, others: ReadonlyArray<{ name: string; value: number }>): string {
  const ratios = others.map((o) => `${o.name} ${hermes.value > 0 ? (o.value / hermes.value).toFixed(2) : "?"}x`);
  return `${scenario}: ${placement} ${what} against ${hermes.name} (${hermes.text}): ${ratios.join(", ")}`;
}
