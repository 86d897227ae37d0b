import { timingSafeEqual } from "node:crypto";
import { createCodec, negotiateCodec, SUPPORTED_CODECS, type FrameCodec } from "../src/protocol/codec.ts";
import { CodecName, HelloSchema, PROTOCOL_VERSION, type Hello } from "../src/protocol/control-frames.ts";
import { isPlainMap, isValidEnvelope, parseEnvelope } from "../src/protocol/envelope-check.ts";
import type { Envelope } from "../src/protocol/envelope.ts";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { DEFAULT_MAX_FRAME_BYTES, FrameDecoder } from "../src/protocol/frame-decoder.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";
import { newMessageId } from "../src/protocol/ids.ts";
import { ControlType, MessageType } from "../src/protocol/message-types.ts";
import { AckTracker } from "./ack-tracker.ts";
import { SendWindow } from "./send-window.ts";
import { WriteQueue } from "./write-queue.ts";

/** Settings shared by both ends of a connection. */
export interface ConnectionOptions {
  /** This side's name in hello. */
  node: string;
  /** Codecs offered, preferred first; `msgpack` is always added. Default: every supported codec. */
  codecs?: readonly string[];
  /** Unacknowledged envelopes this side accepts from the peer. Default 4096 (measured: bench stream; 1024 costs about a fifth of the throughput). */
  window?: number;
  /** Token sent in hello (dialing side). */
  token?: string;
  /** Token the peer must present (accepting side); a missing or wrong one gets code 5 and a close. */
  requireToken?: string;
  /** Largest frame body accepted. Default 16 MiB. */
  maxFrameBytes?: number;
  /** Send a ping after this long without traffic. Default 5000 ms. */
  pingIntervalMs?: number;
  /** Close when the peer's hello has not arrived after this long. Default 5000 ms. */
  helloTimeoutMs?: number;
  /** Close when a started frame is not complete after this long (slow-loris guard). Default 30000 ms. */
  frameTimeoutMs?: number;
  /** Close after this many undecodable or invalid frames. Default 16. */
  maxBadFrames?: number;
  /** Most envelopes that may wait for credit before send() refuses with code 6. Default 100000. */
  maxBacklog?: number;
}

/** The socket operations a connection uses; Bun's TCP and Unix sockets provide them. */
export interface ConnectionSocket {
  write(data: Uint8Array): number;
  end(): void;
  terminate?(): void;
}

/** Connection life cycle, as a discriminated union. */
export type ConnectionStatus =
  | { type: "handshaking" }
  | { type: "open"; peer: Hello; codec: CodecName }
  | { type: "unhealthy"; missedPongs: number }
  | { type: "healthy" }
  | { type: "closed"; error?: HermesError };

/** Receives every valid envelope; call `connection.settle(seq)` once it has been handled. */
export type EnvelopeHandler = (env: Envelope, seq: number, connection: Connection) => void;

const HOUSEKEEPING_MS = 250;

/**
 * One end of a Hermes connection over a byte stream: hello handshake with codec and window
 * negotiation, optional token auth, framing, cumulative acks, credit window, coalesced writes,
 * ping/pong on idle links, and coded errors for bad input. Envelopes sent are kept until
 * acknowledged, so an owner can redeliver them elsewhere after a break.
 */
export class Connection {
  readonly role: "dialer" | "acceptor";
  readonly options: Required<Omit<ConnectionOptions, "token" | "requireToken">> & Pick<ConnectionOptions, "token" | "requireToken">;
  /**
   * Receives every valid envelope. Until an owner sets it, envelopes are held (a peer may send
   * the moment its hello is out, before the dialing side has wired its handler) and handed
   * over, in order, when it is set.
   */
  get onEnvelope(): EnvelopeHandler {
    return this.#onEnvelope ?? this.#hold;
  }

  set onEnvelope(handler: EnvelopeHandler) {
    this.#onEnvelope = handler;
    const held = this.#held;
    this.#held = [];
    for (const [env, seq] of held) this.#deliver(env, seq);
  }
  /** When set, called for every envelope the peer acknowledged (a durable outbox deletes it then). */
  onAcknowledged: ((env: Envelope) => void) | undefined;
  /** Status changes: open, unhealthy, healthy, closed. */
  onStatus: (status: ConnectionStatus) => void = () => {};
  /** The peer's hello, once received. */
  peer: Hello | undefined;
  /** Resolves with the peer's hello once the handshake is done; rejects if the connection closes first. */
  readonly ready: Promise<Hello>;

  #socket: ConnectionSocket;
  #writer: WriteQueue;
  #decoder: FrameDecoder;
  #plain: FrameCodec = createCodec(CodecName.MSGPACK);
  #encoder: FrameCodec = this.#plain;
  #decoderCodec: FrameCodec = this.#plain;
  #window: SendWindow;
  #acks = new AckTracker();
  #state: "handshaking" | "open" | "closing" | "closed" = "handshaking";
  #readyResolvers = Promise.withResolvers<Hello>();
  #closed = Promise.withResolvers<void>();
  #openedAt = Date.now();
  #lastReceived = Date.now();
  #partialSince = 0;
  #pingNonce = 0;
  #missedPongs = 0;
  #pingOutstanding = false;
  #lastPingSent = 0;
  #ackWaiters: Array<() => void> = [];
  #onEnvelope: EnvelopeHandler | undefined;
  #held: Array<[Envelope, number]> = [];
  #hold: EnvelopeHandler = (env, seq) => void this.#held.push([env, seq]);
  #writableWaiters: Array<{ lowWater: number; resolve: () => void }> = [];
  #stats = { pingsSent: 0, pongsReceived: 0, badFrames: 0 };
  /** Received seqs to settle once a parked answer goes on the wire (end-to-end backpressure). */
  #settleOnTransmit = new Map<Envelope, number>();
  #badFrames = 0;
  #receivedHighest = 0;
  #timer: ReturnType<typeof setInterval>;
  #closeError: HermesError | undefined;
  #ackPending = false;
  #ackAlone = () => {
    this.#ackPending = false;
    this.#flushAcks();
    this.#writer.flush();
  };
  /** Writes the cumulative ack if it moved; called by the write queue just before each coalesced write. */
  #flushAcks = () => {
    const seq = this.#acks.takeAck();
    if (seq > 0 && this.#state !== "closed") this.#writeControl({ message_type: ControlType.ACK, seq });
  };

  constructor(socket: ConnectionSocket, role: "dialer" | "acceptor", options: ConnectionOptions) {
    this.role = role;
    const codecs = [...(options.codecs ?? SUPPORTED_CODECS)];
    if (!codecs.includes(CodecName.MSGPACK)) codecs.push(CodecName.MSGPACK);
    this.options = {
      window: 4096,
      maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
      pingIntervalMs: 5000,
      helloTimeoutMs: 5000,
      frameTimeoutMs: 30_000,
      maxBadFrames: 16,
      maxBacklog: 100_000,
      ...options,
      codecs,
    };
    this.#socket = socket;
    this.#writer = new WriteQueue(socket, this.#flushAcks);
    this.#decoder = new FrameDecoder(this.options.maxFrameBytes);
    this.#window = new SendWindow(1);
    this.ready = this.#readyResolvers.promise;
    this.ready.catch(() => {});
    this.#timer = setInterval(() => this.#housekeeping(), Math.min(HOUSEKEEPING_MS, this.options.pingIntervalMs));
    this.#timer.unref?.();
    // The dialer speaks first; the acceptor answers only a hello it accepts, so a refusal
    // (bad hello, wrong token) reaches the dialer before it believes the handshake is done.
    if (role === "dialer") this.#sendHello();
  }

  #sendHello(): void {
    this.#writeControl({
      message_type: ControlType.HELLO,
      protocol: PROTOCOL_VERSION,
      node: this.options.node,
      codecs: this.options.codecs,
      window: this.options.window,
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
    return this.#stats;
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
   * Throws code 10 on a closed connection and code 6 when the backlog is full.
   */
  send(env: Envelope, settles?: number): void {
    if (this.#state === "closed" || this.#state === "closing") {
      throw new HermesError(ErrorCode.UNAVAILABLE, "connection is closed", { retry_after_ms: 100 });
    }
    if (this.#state === "open" && this.#window.hasCredit && this.#window.backlogged === 0) {
      this.#transmit(env);
      if (settles !== undefined) this.settle(settles);
      return;
    }
    if (this.#window.backlogged >= this.options.maxBacklog) {
      throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "send backlog full: the peer is not acknowledging", {
        resource: "send_backlog",
        used: this.#window.backlogged,
        limit: this.options.maxBacklog,
      });
    }
    this.#window.defer(env);
    if (settles !== undefined) this.#settleOnTransmit.set(env, settles);
  }

  /**
   * Marks a received envelope as handled. The cumulative ack rides on the next data write (an
   * answer, the caller's next request); when none comes this event-loop turn, it goes alone.
   */
  settle(seq: number): void {
    // A flush already due this tick carries the ack (its beforeFlush hook); else one goes alone.
    if (this.#acks.settle(seq) && !this.#ackPending && !this.#writer.scheduled) {
      this.#ackPending = true;
      setImmediate(this.#ackAlone);
    }
  }

  /** Every envelope sent or parked and not acknowledged, oldest first: what a new connection must redeliver. */
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
    if (this.#state === "closed" || this.#window.backlogged <= lowWater) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#writableWaiters.push({ lowWater, resolve });
    return promise;
  }

  /** Resolves when every sent envelope has been acknowledged (or the connection closed). */
  async whenAcknowledged(timeoutMs = 5000): Promise<boolean> {
    if (this.#state !== "closed" && !this.#allAcknowledged()) {
      const { promise, resolve } = Promise.withResolvers<void>();
      this.#ackWaiters.push(resolve);
      const timer = setTimeout(resolve, timeoutMs);
      await promise;
      clearTimeout(timer);
    }
    return this.#allAcknowledged();
  }

  #allAcknowledged(): boolean {
    return this.#window.inFlight === 0 && this.#window.backlogged === 0;
  }

  #notifyWritable(all: boolean): void {
    const backlog = this.#window.backlogged;
    const waiting = this.#writableWaiters;
    this.#writableWaiters = [];
    for (const waiter of waiting) {
      if (all || backlog <= waiter.lowWater) waiter.resolve();
      else this.#writableWaiters.push(waiter);
    }
  }

  #notifyAckWaiters(): void {
    const waiting = this.#ackWaiters;
    this.#ackWaiters = [];
    for (const resolve of waiting) resolve();
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
    this.#flushAcks();
    await Promise.race([this.#writer.whenFlushed(), Bun.sleep(1000)]);
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
    this.#lastReceived = Date.now();
    try {
      this.#decoder.push(chunk, this.#onFrameRange);
    } catch (error) {
      // Framing is broken (size or zero length): say why, then close.
      this.#failAndClose(HermesError.from(error, ErrorCode.INVALID_REQUEST));
      return;
    }
    this.#partialSince = this.#decoder.bufferedBytes > 0 ? this.#partialSince || Date.now() : 0;
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

  #transmit(env: Envelope): void {
    env.seq = this.#window.assign(env);
    this.#writer.pushFrame(this.#encoder.encode(env));
  }

  #writeControl(frame: Record<string, unknown>): void {
    this.#writer.pushFrame(this.#encoder.encode(frame));
  }

  #onFrameRange = (buffer: Uint8Array, start: number, end: number): void => this.#onFrame(buffer, start, end);

  #onFrame(buffer: Uint8Array, start: number, end: number): void {
    if (this.#state === "closed" || this.#state === "closing") return;
    let value: any;
    try {
      value = this.#decoderCodec.decode(buffer, start, end);
    } catch (error) {
      // A records stream that failed to decode has lost its structure table: it cannot go on.
      const fatal = this.#decoderCodec.name !== CodecName.MSGPACK;
      this.#badFrame(new HermesError(ErrorCode.INVALID_REQUEST, "frame body is not valid MessagePack", {
        reason: error instanceof Error ? error.message : String(error),
        expected: "a MessagePack map",
      }), fatal);
      return;
    }
    if (!isPlainMap(value)) {
      this.#badFrame(new HermesError(ErrorCode.INVALID_REQUEST, "frame body must be a map", {
        reason: `got ${describe(value)}`,
        expected: "a MessagePack map",
      }), this.#state === "handshaking");
      return;
    }
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
        else this.#badFrame(invalid("ack.seq must be an integer", "{message_type:'ack', seq:int}"), false);
        return;
      case ControlType.PING:
        this.#writeControl({ message_type: ControlType.PONG, ...(value.nonce !== undefined && { nonce: value.nonce }) });
        return;
      case ControlType.PONG:
        this.#pingOutstanding = false;
        this.#stats.pongsReceived++;
        return;
      case ControlType.HELLO:
        this.#badFrame(invalid("hello sent twice", "one hello per direction, first"), false);
        return;
    }
    this.#onEnvelopeFrame(value);
  }

  #onEnvelopeFrame(value: any): void {
    const seq = value.seq;
    const hasSeq = Number.isInteger(seq) && seq >= 1;
    if (hasSeq && seq > this.#receivedHighest) this.#receivedHighest = seq;
    if (!isValidEnvelope(value)) {
      let error: HermesError;
      try {
        parseEnvelope(value);
        error = invalid("envelope rejected", "a Hermes envelope");
      } catch (e) {
        error = HermesError.from(e, ErrorCode.INVALID_REQUEST);
      }
      this.#badFrame(error, false, value);
      if (hasSeq) this.settle(seq);
      return;
    }
    if (!hasSeq) {
      this.#badFrame(invalid("seq: required on a connection", "seq: integer from 1, per connection and direction"), false, value);
      return;
    }
    if (this.#receivedHighest - this.#acks.handledThrough > this.options.window) {
      // The peer ignored our window: refuse rather than let the mailbox grow without bound.
      this.#reply(value, new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "peer exceeded the credit window", {
        resource: "window",
        used: this.#receivedHighest - this.#acks.handledThrough,
        limit: this.options.window,
      }));
      this.settle(seq);
      return;
    }
    this.#badFrames = 0;
    this.#deliver(value, seq);
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
    const parsed = HelloSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      this.#failAndClose(invalid(`bad hello: ${issue.path.join(".") || "(frame)"}: ${issue.message}`,
        "{message_type:'hello', protocol:1, node, codecs:['msgpack',...], window}"));
      return;
    }
    const hello = parsed.data;
    if (hello.protocol !== PROTOCOL_VERSION) {
      this.#failAndClose(new HermesError(ErrorCode.INVALID_REQUEST, `unsupported protocol version ${hello.protocol}`, {
        reason: `protocol ${hello.protocol}`,
        expected: [PROTOCOL_VERSION],
      }));
      return;
    }
    const required = this.options.requireToken;
    if (required !== undefined && !tokensEqual(hello.token, required)) {
      this.#failAndClose(new HermesError(ErrorCode.AUTH_FAILED, hello.token === undefined ? "token required" : "wrong token", {
        auth_method: "token",
      }));
      return;
    }
    this.peer = hello;
    if (this.role === "acceptor") this.#sendHello();
    const codec = this.role === "acceptor"
      ? negotiateCodec(this.options.codecs, hello.codecs)
      : negotiateCodec(hello.codecs, this.options.codecs);
    this.#encoder = createCodec(codec);
    this.#decoderCodec = createCodec(codec);
    this.#window.window = hello.window;
    this.#state = "open";
    this.#readyResolvers.resolve(hello);
    this.onStatus({ type: "open", peer: hello, codec });
    this.#releaseBacklog();
  }

  #onAck(seq: number): void {
    if (this.#window.ack(seq, this.onAcknowledged) > 0) {
      this.#releaseBacklog();
      if (this.#writableWaiters.length > 0) this.#notifyWritable(false);
      if (this.#ackWaiters.length > 0 && this.#allAcknowledged()) this.#notifyAckWaiters();
    }
  }

  #releaseBacklog(): void {
    let env: Envelope | undefined;
    while (this.#state === "open" && (env = this.#window.takeDeferred()) !== undefined) {
      this.#transmit(env);
      if (this.#settleOnTransmit.size > 0) {
        const seq = this.#settleOnTransmit.get(env);
        if (seq !== undefined) {
          this.#settleOnTransmit.delete(env);
          this.settle(seq);
        }
      }
    }
  }

  /** Answers a frame with a coded error envelope (correlated when the frame had a message_id). */
  #reply(value: any, error: HermesError): void {
    const correlation = typeof value?.message_id === "string" ? value.message_id : "";
    const envelope: Envelope = {
      message_id: newMessageId(),
      message_type: MessageType.ERROR,
      trace_id: typeof value?.trace_id === "string" && value.trace_id ? value.trace_id : correlation || "connection",
      source_agent: this.options.node,
      target_agent: typeof value?.reply_to === "string" && value.reply_to ? value.reply_to : this.peer?.node ?? "peer",
      correlation_id: correlation,
      timestamp: Date.now(),
      ttl: 60_000,
      payload: error.toPayload(),
    };
    if (this.#state === "open") this.send(envelope);
    else this.#writeControl(envelope);
  }

  #badFrame(error: HermesError, fatal: boolean, value?: unknown): void {
    this.#badFrames++;
    this.#stats.badFrames++;
    if (fatal || this.#badFrames > this.options.maxBadFrames) {
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
    const now = Date.now();
    if (this.#state === "handshaking" && now - this.#openedAt > this.options.helloTimeoutMs) {
      this.#failAndClose(invalid("no hello received in time", `hello within ${this.options.helloTimeoutMs} ms`));
      return;
    }
    if (this.#partialSince > 0 && now - this.#partialSince > this.options.frameTimeoutMs) {
      this.#failAndClose(invalid("frame not completed in time", `a whole frame within ${this.options.frameTimeoutMs} ms`));
      return;
    }
    if (this.#state !== "open") return;
    if (now - this.#lastReceived < this.options.pingIntervalMs) {
      if (this.#missedPongs > 0) {
        const wasUnhealthy = this.#missedPongs >= 3;
        this.#missedPongs = 0;
        if (wasUnhealthy) this.onStatus({ type: "healthy" });
      }
      return;
    }
    if (now - this.#lastPingSent < this.options.pingIntervalMs) return;
    if (this.#pingOutstanding) {
      this.#missedPongs++;
      if (this.#missedPongs === 3) this.onStatus({ type: "unhealthy", missedPongs: 3 });
    }
    this.#pingOutstanding = true;
    this.#lastPingSent = now;
    this.#stats.pingsSent++;
    this.#writeControl({ message_type: ControlType.PING, nonce: ++this.#pingNonce });
  }

  #finish(): void {
    if (this.#state === "closed") return;
    this.#state = "closed";
    clearInterval(this.#timer);
    this.#writer.discard();
    this.#decoder.reset();
    const error = this.#closeError ?? new HermesError(ErrorCode.UNAVAILABLE, "connection closed before the handshake finished");
    this.#readyResolvers.reject(error);
    this.onStatus({ type: "closed", ...(this.#closeError && { error: this.#closeError }) });
    this.#notifyAckWaiters();
    this.#notifyWritable(true);
    this.#closed.resolve();
  }
}

function invalid(reason: string, expected: unknown): HermesError {
  return new HermesError(ErrorCode.INVALID_REQUEST, reason, { reason, expected });
}

function describe(value: unknown): string {
  if (value === null) return "nil";
  if (Array.isArray(value)) return "an array";
  if (value instanceof Uint8Array) return "binary";
  return `a ${typeof value}`;
}

/** Constant-time comparison, so a token cannot be guessed byte by byte from timings. */
function tokensEqual(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}
