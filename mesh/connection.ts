import { type Envelope, createFrameError, isValidEnvelope, ControlType, MessageType } from "./envelope.ts";
import { checkPayload, DEFAULT_MAX_FRAME_BYTES, FrameDecoder, decodeFrameBody, envelopeRejection, invalidFrame, windowExceeded } from "./frames.ts";
import { createCodec, type EncodedRange, type FrameCodec, CodecName } from "./codecs.ts";
import { PROTOCOL_ACK_DELAY_MS, PROTOCOL_VERSION, type ConnectionOptions, type Hello, type ResolvedConnectionOptions, acceptHello, resolveConnectionOptions } from "./handshake.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import { AckEmitter, CreditWaiters, SendWindow, WriteQueue, type WritableSocket } from "./flow-control.ts";
import { Liveness } from "./liveness.ts";
import type { LinkEnvelopeHandler, MeshLink } from "./transport.ts";

/**
 * Where a connection's envelopes go. A peer may send the moment its hello is out, before the
 * dialing side has wired its handler: until a handler is set, envelopes are held, and they are
 * handed over in order when it is.
 */
export class EnvelopeHandoff<H extends (env: Envelope, seq: number, ...rest: never[]) => void> {
  #handler: H | undefined;
  #held: Array<[Envelope, number]> = [];

  get handler(): H | undefined {
    return this.#handler;
  }

  /** Sets the handler and returns what was held for it, oldest first. */
  set(handler: H): Array<[Envelope, number]> {
    this.#handler = handler;
    const held = this.#held;
    this.#held = [];
    return held;
  }

  hold(env: Envelope, seq: number): void {
    this.#held.push([env, seq]);
  }
}

/** Shared by every wait that has nothing to wait for. */
const READY: Promise<void> = Promise.resolve();

/** Frames from this size on count against the receive byte budget (small ones are bounded by the window). */
const BIG_FRAME_BYTES = 64 * 1024;


/**
 * One end of a Hermes connection over a byte stream: hello handshake with codec and window
 * negotiation, optional token auth, framing, cumulative acks, credit window, coalesced writes,
 * ping/pong on idle links, and coded errors for bad input. Envelopes sent are kept until
 * acknowledged, so an owner can redeliver them elsewhere after a break.
 */
export class Connection implements MeshLink {
  readonly role: "dialer" | "acceptor";
  readonly options: ResolvedConnectionOptions;
  /** Receives every valid envelope; until it is set they are held (see EnvelopeHandoff). */
  get onEnvelope(): LinkEnvelopeHandler {
    return this.#handoff.handler ?? ((env, seq) => this.#handoff.hold(env, seq));
  }

  set onEnvelope(handler: LinkEnvelopeHandler) {
    for (const [env, seq] of this.#handoff.set(handler)) this.#deliver(env, seq);
  }
  /** When set, called for every envelope the peer acknowledged (a durable outbox deletes it then). */
  onAcknowledged: ((env: Envelope) => void) | undefined;
  /**
   * An envelope that waited for credit turned out unsendable when its turn came (it could not
   * be encoded, or its frame is over the peer's limit): it took no `seq`, and its owner answers
   * for it. (One sent at once throws the same error from send() instead.)
   */
  onUnsendable: ((env: Envelope, error: HermesError) => void) | undefined;
  /** Status changes: open, unhealthy, healthy, closed. */
  onStatus: (status: ConnectionStatus) => void = () => {};
  /** The peer's hello, once received. */
  peer: Hello | undefined;
  /** Resolves with the peer's hello once the handshake is done; rejects if the connection closes first. */
  readonly ready: Promise<Hello>;

  #socket: ByteStream;
  #writer: WriteQueue;
  #decoder: FrameDecoder;
  // Plain msgpack (stateless) both ways until hello negotiates the codec.
  #encoder: FrameCodec = createCodec(CodecName.MSGPACK);
  #decoderCodec: FrameCodec = this.#encoder;
  #window: SendWindow;
  #waiters: CreditWaiters;
  #acks = new AckEmitter((seq) => {
    if (this.#state !== "closed") this.#writeControl({ message_type: ControlType.ACK, seq });
  });
  #state: "handshaking" | "open" | "closing" | "closed" = "handshaking";
  #readyResolvers = Promise.withResolvers<Hello>();
  #closed = Promise.withResolvers<void>();
  #handoff = new EnvelopeHandoff<LinkEnvelopeHandler>();
  /** Bad frames since the connection opened (stats), and since the last good envelope (the cut-off). */
  #badFramesTotal = 0;
  #badFramesInARow = 0;
  #liveness: Liveness;
  #receivedHighest = 0;
  /** Received big frames not yet handled, by seq, and their total: the receive byte budget. */
  #bigFramesHeld = new Map<number, number>();
  #heldBytes = 0;
  #closeError: HermesError | undefined;
  /** This side let the peer hold its acks (hello's ack_delay_ms): it pings for them when it needs them. */
  #offeredAckDelay: boolean;

  constructor(socket: ByteStream, role: "dialer" | "acceptor", options: ConnectionOptions) {
    this.role = role;
    this.options = resolveConnectionOptions(options);
    this.#offeredAckDelay = (this.options.ackDelayMs ?? 0) > PROTOCOL_ACK_DELAY_MS;
    this.#socket = socket;
    this.#writer = new WriteQueue(socket, this.#acks.flush);
    this.#acks.attach(this.#writer);
    this.#decoder = new FrameDecoder(this.options.maxFrameBytes);
    this.#liveness = new Liveness(this.options);
    this.#window = new SendWindow(1, this.options.maxBacklog, this.options.maxUnackedBytes);
    this.#waiters = new CreditWaiters(this.#window);
    this.ready = this.#readyResolvers.promise;
    this.ready.catch(() => {});
    this.#liveness.start(() => this.#housekeeping());
    // The dialer speaks first; the acceptor answers only a hello it accepts (a refusal comes before the dialer thinks it is done).
    if (role === "dialer") this.#sendHello();
  }

  #sendHello(): void {
    this.#writeControl({
      message_type: ControlType.HELLO,
      protocol: PROTOCOL_VERSION,
      node: this.options.node,
      codecs: this.options.codecs,
      window: this.options.window,
      max_frame_bytes: this.options.maxFrameBytes,
      ...(this.options.ackDelayMs !== undefined && { ack_delay_ms: this.options.ackDelayMs }),
      ...(this.role === "dialer" && this.options.token !== undefined && { token: this.options.token }),
    });
  }

  /** True after the handshake and before close. */
  get isOpen(): boolean {
    return this.#state === "open";
  }

  /** The codec in use after hello. */
  get codec(): CodecName {
    return this.#encoder.name;
  }

  /** Envelopes sent and not yet acknowledged by the peer. */
  get inFlight(): number {
    return this.#window.inFlight;
  }

  /** Envelopes waiting for the peer's credit. */
  get backlogged(): number {
    return this.#window.backlogged;
  }

  /** Counters for health views and metrics. */
  get stats(): Readonly<{ pingsSent: number; pongsReceived: number; badFrames: number }> {
    return { ...this.#liveness.stats, badFrames: this.#badFramesTotal };
  }

  /** Why the connection closed, when it closed on an error. */
  get closeError(): HermesError | undefined {
    return this.#closeError;
  }

  /** Resolves when the connection has closed. */
  get closed(): Promise<void> {
    return this.#closed.promise;
  }

  /**
   * Sends an envelope: stamped with the next `seq` (the object becomes the connection's until
   * acknowledged) and written this tick, or parked until the peer grants credit.
   * Throws code 10 on a closed connection, code 6 when the backlog is full or the frame is over
   * the peer's limit, and code 2 for a payload nested too deep or not encodable; a refused
   * envelope takes no `seq`, so the link goes on.
   */
  send(env: Envelope, settles?: number): void {
    if (this.#state === "closed" || this.#state === "closing") {
      throw new HermesError(ErrorCode.UNAVAILABLE, "connection is closed", { retry_after_ms: 100 });
    }
    checkPayload(env.payload);
    const now = Date.now();
    if (this.#state === "open" && this.#window.hasCredit && this.#window.backlogged === 0) {
      this.#transmit(env, now);
      if (settles !== undefined) this.settle(settles);
      return;
    }
    // Out of credit: a peer allowed to hold its acks is asked for them (once per wait).
    if (this.#offeredAckDelay && this.#window.backlogged === 0) this.#askForAcks();
    this.#window.defer(env, settles, now);
  }

  /**
   * Marks a received envelope as handled. The cumulative ack rides on the next data write (an
   * answer, the caller's next request); when none comes this event-loop turn, it goes alone. The
   * answer to the last frame read, alone unacknowledged (a pipeline would have more), goes now
   * with its ack, not after the work that follows it this turn (docs/protocol.md §4).
   */
  settle(seq: number): void {
    if (this.#bigFramesHeld.size > 0) this.#releaseHeldBytes(seq);
    this.#acks.settle(seq);
    if (this.#decoder.lastOfChunk && this.#window.inFlight === 1 && this.#writer.pendingBytes > 0) this.#writer.flushNow();
  }

  /**
   * Every envelope sent or parked and not acknowledged, oldest first: what a new connection must
   * redeliver, each with its ttl reduced by the time it waited on this one.
   */
  unacknowledged(): Envelope[] {
    return this.#window.pending();
  }

  /**
   * Resolves once at most `lowWater` envelopes wait for credit (or the connection closed): how a
   * producer that sends faster than the peer handles keeps its own memory bounded.
   *
   * @example
   * for (const env of envelopes) { connection.send(env); if (connection.backlogged > 8192) await connection.whenWritable(4096); }
   */
  whenWritable(lowWater = 0): Promise<void> {
    return this.#waiters.whenWritable(lowWater);
  }

  /** True while a producer may go on sending (see CreditWaiters.hasRoom). */
  get hasRoom(): boolean {
    return this.#state === "closed" || this.#waiters.hasRoom;
  }

  /** Resolves at once while there is room; else once the backlog has fallen to half of it. */
  whenRoom(): Promise<void> {
    return this.hasRoom ? READY : this.#waiters.whenRoom();
  }

  /** Resolves true when every sent envelope has been acknowledged; false after `timeoutMs` or a close. */
  whenAcknowledged(timeoutMs = 5000): Promise<boolean> {
    if (!this.#waiters.allAcknowledged) this.#askForAcks();
    return this.#waiters.whenAcknowledged(timeoutMs);
  }

  /** A peer allowed to hold its acks longer than the protocol's 5 ms sends them with its pong. */
  #askForAcks(): void {
    if (this.#offeredAckDelay && this.#state === "open") this.#writeControl({ message_type: ControlType.PING });
  }

  /**
   * Closes cleanly: owed acks and queued frames are flushed, then the stream is ended. With
   * `waitForAcks`, first waits (up to that many ms) for the peer to acknowledge what was sent.
   */
  async close(options: { waitForAcks?: number } = {}): Promise<void> {
    if (this.#state === "closed" || this.#state === "closing") return this.#closed.promise;
    if (options.waitForAcks && this.#state === "open") await this.whenAcknowledged(options.waitForAcks);
    if ((this.#state as string) === "closed") return;
    this.#state = "closing";
    this.#acks.flush();
    // At most a second for the queue to drain; the timer must not keep a finished script alive.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.#writer.whenFlushed(), new Promise<void>((resolve) => (timer = setTimeout(resolve, 1000)))]);
    clearTimeout(timer);
    this.#socket.end();
    this.#finish();
  }

  /** Hard stop: no flush. */
  destroy(error?: HermesError): void {
    if (this.#state === "closed") return;
    this.#closeError ??= error;
    (this.#socket.terminate ?? this.#socket.end).call(this.#socket);
    this.#finish();
  }

  // ---- socket callbacks (wired by the transport) ----

  /** @internal Bytes arrived. */
  handleData(chunk: Uint8Array): void {
    if (this.#state === "closed") return;
    try {
      this.#decoder.push(chunk, this.#onFrameRange);
    } catch (error) {
      // Framing is broken (size or zero length): say why, then close.
      this.#failAndClose(HermesError.from(error, ErrorCode.INVALID_REQUEST));
      return;
    }
    this.#liveness.received(this.#decoder.bufferedBytes);
  }

  /** @internal The kernel accepts writes again. */
  handleDrain(): void {
    this.#writer.onDrain();
  }

  /** @internal The socket closed (either side). */
  handleClose(error?: Error): void {
    if (error && !this.#closeError) this.#closeError = HermesError.from(error, ErrorCode.UNAVAILABLE);
    this.#finish();
  }

  // ---- internals ----

  /**
   * Encodes and writes one envelope with the next seq, which is committed only once the frame
   * is known to be sendable: a gap in seqs would stall the peer's cumulative ack for good.
   */
  #transmit(env: Envelope, since: number): void {
    // An ack due goes ahead of a write's first envelope, so the peer frees its window first.
    if (this.#writer.pendingBytes === 0 && this.#acks.tracker.ackDue) this.#acks.flush();
    env.seq = this.#window.nextSeq;
    let frame: EncodedRange;
    try {
      frame = this.#encoder.encodeRange(env);
    } catch (error) {
      delete env.seq;
      this.#encoderOutOfStep();
      throw new HermesError(ErrorCode.INVALID_REQUEST, `envelope cannot be encoded: ${(error as Error).message}`, {
        reason: (error as Error).message,
        expected: "a payload of MessagePack values",
      }, { cause: error });
    }
    const limit = this.peer?.max_frame_bytes ?? DEFAULT_MAX_FRAME_BYTES;
    const bytes = frame.end - frame.start;
    if (bytes > limit) {
      delete env.seq;
      this.#encoderOutOfStep();
      throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, `frame of ${bytes} bytes is over the peer's limit of ${limit}`, {
        resource: "frame_bytes",
        used: bytes,
        limit,
      });
    }
    this.#window.assign(env, bytes, since);
    this.#writer.pushEncoded(frame);
  }

  /**
   * A records encoder that packed a frame which is then not sent has learned structures the
   * peer never will: the stream cannot go on. The connection is dropped (after the caller has
   * its error) and the owner's link resends what was unacknowledged on a fresh one.
   */
  #encoderOutOfStep(): void {
    if (this.#encoder.name === CodecName.MSGPACK) return;
    queueMicrotask(() => this.destroy(new HermesError(ErrorCode.UNAVAILABLE, "connection reset: an unsendable frame left the records encoder out of step")));
  }

  #writeControl(frame: Record<string, unknown>): void { this.#writer.pushEncoded(this.#encoder.encodeRange(frame)); }

  #onFrameRange = (buffer: Uint8Array, start: number, end: number): void => this.#onFrame(buffer, start, end);

  #onFrame(buffer: Uint8Array, start: number, end: number): void {
    if (this.#state === "closed" || this.#state === "closing") return;
    const body = decodeFrameBody(this.#decoderCodec, buffer, start, end, this.#state === "handshaking");
    if ("error" in body) {
      this.#badFrame(body.error, body.fatal);
      return;
    }
    const value = body.map;
    if (this.#state === "handshaking") {
      if (value.message_type === MessageType.ERROR) {
        // The peer refused our hello and is closing: surface its coded reason.
        this.#closeError = HermesError.fromWire(value);
        this.destroy();
        return;
      }
      this.#onHello(value);
      return;
    }
    switch (value.message_type) {
      case ControlType.ACK:
        if (Number.isInteger(value.seq)) this.#onAck(value.seq as number);
        else this.#badFrame(invalidFrame("ack.seq must be an integer", "{message_type:'ack', seq:int}"), false);
        return;
      case ControlType.PING:
        this.#writeControl({ message_type: ControlType.PONG, ...(value.nonce !== undefined && { nonce: value.nonce }) });
        return;
      case ControlType.PONG:
        this.#liveness.pong();
        return;
      case ControlType.HELLO:
        this.#badFrame(invalidFrame("hello sent twice", "one hello per direction, first"), false);
        return;
    }
    this.#onEnvelopeFrame(value, end - start);
  }

  #onEnvelopeFrame(value: any, bytes: number): void {
    const seq = value.seq;
    const hasSeq = Number.isInteger(seq) && seq >= 1;
    if (hasSeq && seq > this.#receivedHighest) this.#receivedHighest = seq;
    if (!isValidEnvelope(value)) {
      this.#badFrame(envelopeRejection(value), false, value);
      if (hasSeq) this.settle(seq);
      return;
    }
    try {
      checkPayload(value.payload);
    } catch (error) {
      this.#badFrame(error as HermesError, false, value);
      if (hasSeq) this.settle(seq);
      return;
    }
    if (!hasSeq) {
      this.#badFrame(invalidFrame("seq: required on a connection", "seq: integer from 1, per connection and direction"), false, value);
      return;
    }
    if (this.#receivedHighest - this.#acks.tracker.handledThrough > this.options.window) {
      // The peer ignored our window: refuse rather than let the mailbox grow without bound.
      this.#reply(value, windowExceeded(this.#receivedHighest - this.#acks.tracker.handledThrough, this.options.window));
      this.settle(seq);
      return;
    }
    if (bytes >= BIG_FRAME_BYTES && !this.#holdBytes(seq, bytes)) {
      this.#reply(value, new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "receive byte budget spent: too many large envelopes wait to be handled", {
        resource: "receive_bytes",
        used: this.#heldBytes + bytes,
        limit: this.options.maxUnhandledBytes,
      }));
      this.settle(seq);
      return;
    }
    this.#badFramesInARow = 0;
    this.#deliver(value, seq);
  }

  /** Counts a big frame against the receive budget until it is settled; false when it does not fit. */
  #holdBytes(seq: number, bytes: number): boolean {
    if (this.#heldBytes + bytes > this.options.maxUnhandledBytes) return false;
    this.#bigFramesHeld.set(seq, bytes);
    this.#heldBytes += bytes;
    return true;
  }

  #releaseHeldBytes(seq: number): void {
    const bytes = this.#bigFramesHeld.get(seq);
    if (bytes === undefined) return;
    this.#bigFramesHeld.delete(seq);
    this.#heldBytes -= bytes;
  }

  #deliver(env: Envelope, seq: number): void {
    try {
      this.onEnvelope(env, seq, this);
    } catch (error) {
      // An owner's handler threw: the peer gets code 7, the connection carries on.
      this.#reply(env, HermesError.from(error, ErrorCode.INTERNAL));
      this.settle(seq);
    }
  }

  #onHello(value: Record<string, unknown>): void {
    let accepted;
    try {
      accepted = acceptHello(value, { role: this.role, codecs: this.options.codecs, requireToken: this.options.requireToken });
    } catch (error) {
      this.#failAndClose(HermesError.from(error, ErrorCode.INVALID_REQUEST));
      return;
    }
    const { hello, codec } = accepted;
    this.peer = hello;
    if (this.role === "acceptor") this.#sendHello();
    this.#encoder = createCodec(codec);
    this.#decoderCodec = createCodec(codec);
    this.#window.window = hello.window;
    if ((hello.ack_delay_ms ?? 0) > PROTOCOL_ACK_DELAY_MS) this.#acks.holdFor(hello.ack_delay_ms!, this.options.window);
    this.#state = "open";
    this.#readyResolvers.resolve(hello);
    this.onStatus({ type: "open", peer: hello, codec });
    this.#releaseBacklog();
  }

  #onAck(seq: number): void {
    if (this.#window.ack(seq, this.onAcknowledged) > 0) {
      this.#releaseBacklog();
      this.#waiters.onAcked();
      // Still short of credit, or waited on: what went out since the last ask is asked for too.
      if (this.#offeredAckDelay && !this.#waiters.allAcknowledged && (this.#window.backlogged > 0 || this.#waiters.waitingForAll)) this.#askForAcks();
    }
  }

  #releaseBacklog(): void {
    let env: Envelope | undefined;
    while (this.#state === "open" && (env = this.#window.takeDeferred()) !== undefined) {
      try {
        this.#transmit(env, this.#window.takenSince);
      } catch (error) {
        this.onUnsendable?.(env, HermesError.from(error));
      }
      const seq = this.#window.settlesOf(env);
      if (seq !== undefined) this.settle(seq);
    }
  }

  /** Answers a frame with a coded error envelope (correlated when the frame had a message_id). */
  #reply(value: any, error: HermesError): void {
    const envelope = createFrameError(value, this.options.node, this.peer?.node, error);
    if (this.#state === "open") this.send(envelope);
    else this.#writeControl(envelope);
  }

  #badFrame(error: HermesError, fatal: boolean, value?: unknown): void {
    this.#badFramesInARow++;
    this.#badFramesTotal++;
    if (fatal || this.#badFramesInARow > this.options.maxBadFrames) {
      this.#failAndClose(error);
      return;
    }
    this.#reply(value, error);
  }

  /** Tells the peer why (best effort), then closes. */
  #failAndClose(error: HermesError): void {
    if (this.#state === "closed" || this.#state === "closing") return;
    this.#closeError = error;
    try {
      this.#reply(undefined, error);
    } catch {
      // Nothing more can be said on this connection.
    }
    this.#state = "closing";
    this.#writer.flush();
    this.#socket.end();
    this.#finish();
  }

  #housekeeping(): void {
    for (const action of this.#liveness.check(this.#state)) {
      if (action.type === "close") this.#failAndClose(action.error);
      else if (action.type === "ping") this.#writeControl({ message_type: ControlType.PING, nonce: action.nonce });
      else this.onStatus(action);
    }
  }

  #finish(): void {
    if (this.#state === "closed") return;
    this.#state = "closed";
    this.#liveness.stop();
    this.#acks.stop();
    this.#writer.discard();
    this.#decoder.reset();
    const error = this.#closeError ?? new HermesError(ErrorCode.UNAVAILABLE, "connection closed before the handshake finished");
    this.#readyResolvers.reject(error);
    this.onStatus({ type: "closed", ...(this.#closeError && { error: this.#closeError }) });
    this.#waiters.close();
    this.#closed.resolve();
  }
}

/**
 * The writing end of the byte stream a connection runs on (mesh/socket-transport.ts provides
 * it over Bun's or node:net sockets): the write queue's socket (Bun's `write` semantics), and its end.
 */
export interface ByteStream extends WritableSocket {
  end(): void;
  /** Closes at once, dropping what is unsent. */
  terminate?(): void;
}

/** Connection life cycle, as a discriminated union. */
export type ConnectionStatus =
  | { type: "handshaking" }
  | { type: "open"; peer: Hello; codec: CodecName }
  | { type: "unhealthy"; missedPongs: number }
  | { type: "healthy" }
  | { type: "closed"; error?: HermesError };
