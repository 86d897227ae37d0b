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
   * Optional: a round trip carrying `payloadBytes` of payload each way (the payload built
   * once, here). Contenders that have it take part in the hop scenario's payload sweep.
   */
  sized?(payloadBytes: number): () => Promise<void>;
  /**
   * For a client that cannot live in this process (Node's child_process IPC needs a Node
   * parent): `n` sequential 128-byte round trips timed by that client itself, in ns each.
   * When present, the pingpong scenario measures with it: timing `roundTrip()` here would add
   * the hop to that client to every sample.
   */
  roundTrips?(n: number): Promise<number[]>;
  /** The processes answering at the other end, whose CPU time per round trip is reported beside this process's. */
  readonly peerPids?: readonly number[];
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
  /** A mesh contender's directory (its members' event logs are under logs/), for tests to read. */
  readonly meshDir?: string;
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
  /** `n` sequential round trips of `payloadBytes` (default 128); resolves with the latency of each, in nanoseconds. */
  roundTrips(n: number, payloadBytes?: number): Promise<number[]>;
  /** A remark on the peer after the run (its memory, say), for the scenario's notes. */
  note?(): string;
}

/**
 * A ring of processes for the chain scenario: a message leaves the ring's start, visits
 * members 1 .. hops-1 in order and comes back to the start, `hops` hops in all.
 */
export interface RingPeer {
  readonly name: string;
  /** A ring of `size` members (the start included), every member on this process's cpus. */
  open(env: { dir: string; size: number }): Promise<RingSession>;
}

export interface RingSession extends AsyncDisposable {
  /** Pid of each member, by position (0 = the start: this process, for a ring driven from here). */
  readonly pids: readonly number[];
  /** `n` sequential trips of `hops` hops; the time of each in ns and the hop count each came back with. */
  trips(n: number, hops: number): Promise<{ samples: number[]; hopsSeen: number[] }>;
  /** Messages each member forwarded so far, by position (the start forwards none). */
  forwarded(): Promise<number[]>;
}

/** Fan-out: one publisher, up to `size` subscribers, each its own process. */
export interface FanoutPeer {
  readonly name: string;
  open(env: { dir: string; size: number }): Promise<FanoutSession>;
}

export interface FanoutSession extends AsyncDisposable {
  /** Pid of the publisher (this process, for a fan-out driven from here), then of each subscriber. */
  readonly pids: readonly number[];
  /**
   * `n` sequential publications to the first `subscribers`, each waited for until all reported
   * back: per publication, ns to the last arrival (machine-wide clock) and to the last report;
   * reports from a subscriber that had reported already; who reported the last publication.
   */
  latency(n: number, subscribers: number): Promise<{ delivered: number[]; reported: number[]; duplicates: number; reporters: string[] }>;
  /** `k` publications back to back to the first `subscribers`: ns until every one reported the last, and each one's count. */
  burst(k: number, subscribers: number): Promise<{ ns: number; counts: number[] }>;
}

/** Fan-in: up to `senders` sender processes streaming to one receiver process. */
export interface FaninPeer {
  readonly name: string;
  open(env: { dir: string; senders: number }): Promise<FaninSession>;
}

export interface FaninSession extends AsyncDisposable {
  /** Pid of the receiver, then of each sender. */
  readonly pids: readonly number[];
  /** Bytes one message occupies on the wire (frame header included). */
  readonly frameBytes: number;
  /** Each of the first `senders` senders sends `n` messages at once; resolves when the receiver acknowledged them all. */
  burst(n: number, senders: number): Promise<void>;
  /** Messages the receiver counted so far, from every sender. */
  received(): Promise<number>;
}

/** An open-loop contender: requests on a fixed schedule, answered concurrently (bench/lib/open-loop.ts). */
export interface OpenLoopPeer {
  readonly name: string;
  open(env: PeerEnv): Promise<OpenLoopSession>;
}

export interface OpenLoopSession extends AsyncDisposable {
  /** One run at a fixed offered rate, measured where the requests are sent. */
  run(spec: import("../lib/open-loop.ts").OpenLoopSpec): Promise<import("../lib/open-loop.ts").OpenLoopResult>;
  /** Answers per second with `concurrency` requests kept outstanding for `ms`. */
  closedLoop(concurrency: number, ms: number): Promise<number>;
}
