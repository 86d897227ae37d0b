/**
 * The transport interface: what the delivery layer (peer links, the mesh node, the control
 * plane) needs from whatever carries envelopes between members. Two kinds implement it:
 *
 * - byte-stream transports (Unix sockets, TCP): mesh/socket-transport.ts, where a Connection
 *   (hello, acks, credit window, coalesced writes) runs over Bun's or node:net sockets;
 * - message transports (a broker such as NATS JetStream): implement MeshLink directly, mapping
 *   `send` to a publish, `settle` to the broker's ack and `unacknowledged` to what the broker
 *   has not confirmed.
 *
 * The contract a link keeps (docs/architecture.md, docs/protocol.md §4): every envelope sent is
 * kept until the peer settles it, and is handed back by `unacknowledged()` once the link has
 * closed, so that its owner redelivers it; `settle(seq)` acknowledges what this side received;
 * nothing is dropped without a coded error.
 */
import type { Envelope } from "./envelope.ts";
import type { HermesError } from "./errors.ts";

/** Who this side is and what it offers when a link opens (the hello of a byte stream). */
export interface LinkSettings {
  /** This side's member address. */
  node: string;
  /** Mesh token presented when dialing. */
  token?: string;
  /** Token a dialing peer must present; a missing or wrong one is refused with code 5. */
  requireToken?: string;
  /** Unacknowledged envelopes this side accepts from the peer (the credit window). */
  window?: number;
}

/** Receives every envelope that arrives on a link; `seq` is settled once it has been handled. */
export type LinkEnvelopeHandler = (env: Envelope, seq: number, link: MeshLink) => void;

/**
 * One open link between two members, in both directions.
 *
 * @example
 * const link = await socketTransport.dial("/tmp/mesh/echo.sock", { node: "client" });
 * link.onEnvelope = (env, seq) => { console.log(env.payload); link.settle(seq); };
 * link.send(request);
 */
export interface MeshLink {
  /** The peer's address, once the link is open. */
  readonly peer: { node: string } | undefined;
  readonly isOpen: boolean;
  /** Resolves when the link has closed, for whatever reason (see closeError). */
  readonly closed: Promise<void>;
  /** Why the link closed, when it was not a clean close. */
  readonly closeError: HermesError | undefined;
  /** Envelopes sent and not yet acknowledged by the peer. */
  readonly inFlight: number;
  /** Envelopes waiting for the peer's credit. */
  readonly backlogged: number;
  /** Every envelope the peer sends; until set, they are held. */
  onEnvelope: LinkEnvelopeHandler;
  /** The peer acknowledged an envelope this side sent. */
  onAcknowledged: ((env: Envelope) => void) | undefined;
  /** An envelope that waited for credit turned out unsendable; its owner answers for it. */
  onUnsendable: ((env: Envelope, error: HermesError) => void) | undefined;
  /** A broker gave up on an envelope this side sent (max deliveries, its receiver never settled it): its owner dead-letters it. Byte streams never call it (their owner counts attempts). */
  onDeadLetter?: ((env: Envelope, error: HermesError) => void) | undefined;
  /** Sends an envelope (throws the coded refusal: 6 when full, 10 when closed); `settles` is a received seq to acknowledge with it. */
  send(env: Envelope, settles?: number): void;
  /** Acknowledges a received envelope once it has been handled. */
  settle(seq: number): void;
  /** True while a producer may go on sending without piling up (backpressure). */
  readonly hasRoom: boolean;
  /** Resolves at once while there is room, else once the peer has taken enough. */
  whenRoom(): Promise<void>;
  /** What was sent and not acknowledged, for redelivery after the link broke: oldest first, each ttl reduced by the time it waited here. */
  unacknowledged(): Envelope[];
  close(): Promise<void>;
}

/** A listening endpoint of a transport. */
export interface LinkListener {
  /** Where it listens, as dial takes it (with the port bound, for `tcp://host:0`). */
  readonly endpoint: string;
  close(): Promise<void>;
}

/**
 * A way to reach members: listen at an endpoint for links, dial one. For the socket transport
 * an endpoint is a socket path or `tcp://host:port`.
 *
 * @example
 * const listener = await socketTransport.listen("/tmp/mesh/echo.sock", { node: "echo", onLink: (link) => serve(link) });
 */
export interface MeshTransport {
  readonly name: string;
  listen(endpoint: string, options: LinkSettings & { onLink(link: MeshLink): void }): Promise<LinkListener>;
  /** Rejects with code 10 when nobody listens there, 5 when the token is refused. */
  dial(endpoint: string, options: LinkSettings): Promise<MeshLink>;
}
