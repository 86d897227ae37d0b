/**
 * The shared shapes of the contenders: every scenario drives its contenders only through
 * these, so adding a peer (Bun IPC, NATS, ...) is one more adapter file.
 */
import type { Placement } from "../lib/placement.ts";

/** Where a contender may put its socket files, and where its peer process runs. */
export interface PeerEnv {
  /** A private temporary directory, removed by the scenario. */
  dir: string;
  placement: Placement;
}

/** A codec contender: fresh encoders and decoders (stateful codecs get their own state each). */
export interface CodecContender {
  readonly name: string;
  encoder(): (value: unknown) => Uint8Array;
  decoder(): (bytes: Uint8Array) => unknown;
}

/** A ping-pong contender: a peer process plus the client side in this process. */
export interface RoundTripPeer {
  readonly name: string;
  /** Why this peer cannot run on this machine (a server binary or runtime missing); undefined when it can. */
  unavailable?(): string | undefined;
  open(env: PeerEnv): Promise<RoundTripSession>;
}

export interface RoundTripSession extends AsyncDisposable {
  /** One request and its whole answer (128 bytes of payload each way). */
  roundTrip(): Promise<void>;
  /**
   * For a client that cannot live in this process (Node's child_process IPC needs a Node
   * parent): `n` sequential 128-byte round trips timed by that client itself, in ns each.
   * When present, the pingpong scenario measures with it: timing `roundTrip()` here would add
   * the hop to that client to every sample.
   */
  roundTrips?(n: number): Promise<number[]>;
}

/** A one-way stream contender: the sender in this process, the receiver in a peer process. */
export interface StreamPeer {
  readonly name: string;
  /** Why this peer cannot run on this machine; undefined when it can. */
  unavailable?(): string | undefined;
  open(env: PeerEnv): Promise<StreamSession>;
}

export interface StreamSession extends AsyncDisposable {
  /** Bytes one message occupies on the wire (frame header included). */
  readonly frameBytes: number;
  /** Sends `n` messages; resolves once the receiver has acknowledged every one. */
  send(n: number): Promise<void>;
  /** Messages the receiver has counted since the session opened (asked of the peer process). */
  received(): Promise<number>;
}

/**
 * A round-trip contender whose round trips may be timed elsewhere than in this process: the
 * actor hop is timed inside the actor that makes it, the socket baselines here.
 */
export interface SampledRoundTripPeer {
  readonly name: string;
  open(env: PeerEnv): Promise<SampledRoundTripSession>;
}

export interface SampledRoundTripSession extends AsyncDisposable {
  /** `n` sequential round trips; resolves with the latency of each, in nanoseconds. */
  roundTrips(n: number): Promise<number[]>;
  /** A remark on the peer after the run (its memory, say), for the scenario's notes. */
  note?(): string;
}
