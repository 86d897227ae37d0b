/**
 * NATS JetStream as a mesh transport (docs/nats.md): members reach each other through one stream
 * per mesh instead of sockets. A member's inbox is the subject `hermes.<mesh>.to.<address>` read by
 * one durable pull consumer; `send` is a publish, `settle` the consumer's ack, the credit window
 * its max_ack_pending. What is routed by capability goes to that capability's shared queue,
 * `hermes.<mesh>.cap.<capability>`, which every member serving it reads through one shared
 * consumer: the first with room takes the job. The only file that loads the @nats-io packages: a node passes
 * `transport: await natsTransport(...)` to MeshNode, so actors on Unix sockets never load it.
 */
import { connect, headers, type NatsConnection, type Subscription, type TlsOptions } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager, type PubAck } from "@nats-io/jetstream";
import { type Envelope, createCancel, createErrorReply, isValidEnvelope, MessageType, takeWaitOff } from "./envelope.ts";
import { ANSWERS, DEAD_LETTER_HEADER, Inbox, type InboxLink } from "./nats-inbox.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import { checkPayload } from "./frames.ts";
import { createPlainCodec } from "./codecs.ts";
import type { MeshNatsSettings } from "./control-protocol.ts";
import type { LinkEnvelopeHandler, LinkListener, LinkSettings, MeshLink, MeshTransport } from "./transport.ts";

/** Where the servers are, which mesh, who this process is, and the JetStream settings of its inboxes. */
export interface NatsTransportOptions {
  /** Server URLs, e.g. `["nats://10.0.0.5:4222"]`. */
  servers: string[];
  /** Names the stream (`HERMES_<mesh>`) and the subjects (`hermes.<mesh>.…`). */
  mesh: string;
  /** This process's member address (in the connection's name). */
  node: string;
  /** Credentials, user and pass or a token: the broker checks them (a link's own token is not used). */
  user?: string; pass?: string; token?: string;
  /** `tls`: passed through to the NATS client (`{ caFile, certFile, keyFile }`); `name`: the connection's, default `hermes <mesh>/<node>`. */
  tls?: TlsOptions | null; name?: string;
  /** How long a delivery held by a process that stopped answering waits before redelivery. Default 3 s (a live holder extends it). */
  ackWaitMs?: number;
  /** Deliveries of one message before it is dead-lettered (docs/protocol.md §4 `max_attempts`). Default 10. */
  maxDeliver?: number;
  /** Dead letters kept per member on `hermes.<mesh>.dead.<address>`, newest: older ones are purged as new ones come. Default 1,000. */
  deadLettersKept?: number;
  /** Replicas of the stream: 3 in a cluster. Default 1. */
  replicas?: number;
  /** How long a publish waits for its PubAck before its link gives up (code 10). Default 5 s. */
  publishTimeoutMs?: number;
}

/** A connected NATS transport: MeshTransport plus the server's payload limit and a close for the connection. */
export interface NatsMeshTransport extends MeshTransport {
  /** The server's max_payload: the largest message (envelope and headers) it takes. */
  readonly maxPayload: number;
  /** How many letters each member's dead subject keeps (`deadLettersKept`, or a mesh file's `dead_letters_kept`). */
  readonly deadLettersKept: number;
  /** Closes every link and inbox, then the connection. */
  close(): Promise<void>;
  /** Before `listen`: the capabilities the member serves, whose shared queues it reads too. */
  serveCapabilities(capabilities: readonly string[]): void;
}

/** How a capability queue's durable consumer name starts: `=` never starts an address's token (a leading `=` is always followed by two hex digits). */
const CAPABILITY_DURABLE = "=cap=";

/** The address an inbox's durable consumer name stands for: a member's, or `capability:<name>` for a capability's shared queue. */
function addressOfDurable(durable: string): string {
  return durable.startsWith(CAPABILITY_DURABLE) ? `capability:${tokenAddress(durable.slice(CAPABILITY_DURABLE.length))}` : tokenAddress(durable);
}

/** How long a process that does not read an inbox waits before it dead-letters that inbox's message itself (#deadLetter). */
const OTHERS_DEAD_LETTER_AFTER_MS = 1000;
/** Credit a listener offers when it names none: as the socket transport's hello. */
const DEFAULT_WINDOW = 4096;
/** Publishes awaiting their PubAck per link: pipelined (an await each is ~8x slower), but bounded. */
const MAX_IN_FLIGHT = 1024;
/** Envelopes a link holds beyond those in flight before `send` refuses with code 6 (as a socket Connection). */
const MAX_BACKLOG = 100_000;
/** Room for the Nats-Msg-Id header a publish adds (53 bytes with a 26-character id). */
const HEADER_BYTES = 64;
const READY: Promise<void> = Promise.resolve();
/** A shared capability queue is pulled a few at a time: what a busy member has not pulled, a free one takes. */
const CAPABILITY_PULL = 8;
const utf8 = new TextEncoder();

/**
 * An address as one subject token and consumer name: [A-Za-z0-9_-] stay, every other UTF-8 byte
 * becomes `=XX` (as the registry's KV keys escape). Reversible, since `=` itself is escaped.
 *
 * @example
 * addressToken("echo#1") === "echo=231"; tokenAddress("echo=231") === "echo#1";
 */
export function addressToken(address: string): string {
  if (address.length === 0) throw new HermesError(ErrorCode.INVALID_REQUEST, "an empty address has no NATS subject", { reason: "address: empty" });
  return address.replace(/[^A-Za-z0-9_-]/gu, (c) => Array.from(utf8.encode(c), (b) => `=${b.toString(16).padStart(2, "0")}`).join(""));
}

/** The address a token stands for (the inverse of {@link addressToken}). @example tokenAddress("a=2eb") === "a.b" */
export function tokenAddress(token: string): string {
  return decodeURIComponent(token.replace(/=/g, "%"));
}

function endpointAddress(endpoint: string): string {
  if (endpoint.startsWith("nats:") && endpoint.length > 5) return endpoint.slice(5);
  throw new HermesError(ErrorCode.INVALID_REQUEST, `'${endpoint}' is not a NATS endpoint`, { reason: "endpoint", expected: "nats:<address>" });
}

function unavailable(what: string, error: unknown, fields: Record<string, unknown> = {}): HermesError {
  return new HermesError(ErrorCode.UNAVAILABLE, `${what}: ${error instanceof Error ? error.message : String(error)}`, { retry_after_ms: 1000, ...fields }, { cause: error });
}

async function openConnection(options: NatsTransportOptions): Promise<NatsConnection> {
  const { servers, user, pass, token, tls } = options;
  try {
    // A mesh outlives server restarts: never stop reconnecting; meanwhile links report the outage (code 10).
    return await connect({ servers, name: options.name ?? `hermes ${options.mesh}/${options.node}`, user, pass, token, ...(tls !== undefined && { tls }), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  } catch (error) {
    const where = servers.join(", ");
    if ((error as Error).name !== "AuthorizationError") throw unavailable(`cannot reach NATS at ${where}`, error, { servers });
    throw new HermesError(ErrorCode.AUTH_FAILED, `NATS at ${where} refused the credentials: ${(error as Error).message}`, { auth_method: user !== undefined ? "user_pass" : "token" }, { cause: error });
  }
}

/**
 * Connects once to the servers, makes sure the mesh's stream exists, and returns the transport.
 * Rejects with code 10 naming the URLs when no server is reachable, 5 when the credentials are refused.
 *
 * @example
 * const transport = await natsTransport({ servers: ["nats://127.0.0.1:4222"], mesh: "shop", node: "echo" });
 * const node = await MeshNode.start({ address: "echo", socketPath: "nats:echo", transport, routes, pick, onRequest });
 */
export async function natsTransport(options: NatsTransportOptions): Promise<NatsMeshTransport> {
  const kept = options.deadLettersKept;
  if (kept !== undefined && !(Number.isSafeInteger(kept) && kept >= 0)) {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `deadLettersKept must be a whole number of 0 or more, not ${String(kept)}`, { reason: "deadLettersKept", expected: "an integer >= 0" });
  }
  const nc = await openConnection(options);
  try {
    const transport = new NatsTransport(nc, await jetstreamManager(nc), options);
    await transport.ensureStream();
    await nc.flush(); // the advisory subscription is in place before any consumer of ours pulls
    return transport;
  } catch (error) {
    await nc.close();
    throw HermesError.from(error, ErrorCode.UNAVAILABLE);
  }
}

/** A mesh's settings (mesh.json, HERMES_NATS) as options: credentials read from the variables they name. */
function fromSettings(settings: MeshNatsSettings, node: string, name?: string): NatsTransportOptions {
  const env = (variable: string | undefined) => (variable ? process.env[variable] : undefined);
  const [user, pass, token] = [env(settings.user_env), env(settings.pass_env), env(settings.token_env)];
  return {
    servers: settings.servers, mesh: settings.mesh, node, replicas: settings.replicas, name, user, pass, token,
    ...(settings.tls && { tls: settings.tls as TlsOptions }), ...(settings.dead_letters_kept !== undefined && { deadLettersKept: settings.dead_letters_kept }),
  };
}

/** The transport of member `node` of a mesh over NATS. @example const transport = await natsTransportFor(settings, "echo"); */
export const natsTransportFor = (settings: MeshNatsSettings, node: string): Promise<NatsMeshTransport> => natsTransport(fromSettings(settings, node));

/** A plain connection with a mesh's settings (the supervisors' registry bucket). @example const nc = await connectNats(settings, "supervisor edge-1"); */
export const connectNats = (settings: MeshNatsSettings, name: string): Promise<NatsConnection> => openConnection(fromSettings(settings, settings.host, name));

/** One connection to NATS and the inboxes of the members in this process. */
class NatsTransport implements NatsMeshTransport {
  readonly name = "nats";
  readonly maxPayload: number;
  readonly stream: string;
  readonly options: Required<Pick<NatsTransportOptions, "ackWaitMs" | "maxDeliver" | "publishTimeoutMs" | "deadLettersKept">> & NatsTransportOptions;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** Plain msgpack: the records codec keeps state per connection, which a broker does not have. */
  #codec = createPlainCodec();
  #nc: NatsConnection;
  #prefix: string;
  /** Inboxes by durable consumer name: members' own, and the capability queues this process serves. */
  #inboxes = new Map<string, Promise<Inbox>>();
  #capabilities: readonly string[] = [];
  #recovering: Promise<void> | undefined;
  #connected = true;
  #advisories: Subscription;

  get deadLettersKept(): number {
    return this.options.deadLettersKept;
  }

  constructor(nc: NatsConnection, jsm: JetStreamManager, options: NatsTransportOptions) {
    [this.#nc, this.jsm, this.js] = [nc, jsm, jetstream(nc)];
    // 3 s: live holders extend it, so it is how long a killed member's messages wait for its next life.
    this.options = { ackWaitMs: 3_000, maxDeliver: 10, publishTimeoutMs: 5000, deadLettersKept: 1000, ...options };
    this.maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    this.stream = `HERMES_${addressToken(options.mesh)}`;
    this.#prefix = `hermes.${addressToken(options.mesh)}`;
    this.#advisories = nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${this.stream}.*`, {
      callback: (error, msg) => void (error || this.#deadLetter(msg.json()).catch(() => {})),
    });
    void (async () => {
      for await (const status of nc.status()) if (status.type === "disconnect" || status.type === "reconnect") this.#connected = status.type === "reconnect";
    })();
  }

  /**
   * Work-queue retention: a message is for one member and deleted once acked, so the stream holds
   * only what is owed, and no second consumer may overlap a filter: no address is read twice. `add`
   * is idempotent for the same config (processes starting at once); 10058: an operator's config won.
   */
  async ensureStream(): Promise<void> {
    const subjects = [`${this.#prefix}.to.>`, `${this.#prefix}.dead.>`, `${this.#prefix}.cap.>`];
    const config = { name: this.stream, subjects, retention: RetentionPolicy.Workqueue, storage: StorageType.File, num_replicas: this.options.replicas ?? 1 };
    const added = await this.jsm.streams.add(config).catch((error) => ((error as { code?: number }).code === 10058 ? undefined : Promise.reject(error)));
    if (added) return;
    // A stream made before capability queues existed gains their subjects; other settings stay the operator's.
    const { config: current } = await this.jsm.streams.info(this.stream);
    const missing = subjects.filter((subject) => !current.subjects?.includes(subject));
    if (missing.length > 0) await this.jsm.streams.update(this.stream, { subjects: [...(current.subjects ?? []), ...missing] });
  }

  subjectOf = (address: string, kind: "to" | "dead" | "cap" = "to"): string => `${this.#prefix}.${kind}.${addressToken(address)}`;
  /** Core NATS (not stored): cancels of what went to a capability's queue, heard by every member serving it. */
  cancelSubjectOf = (capability: string): string => `${this.#prefix}.cancel.${addressToken(capability)}`;

  /** The capabilities the member listening in this process serves: it reads their shared queues too (join.ts sets them before listen). */
  serveCapabilities(capabilities: readonly string[]): void {
    this.#capabilities = [...capabilities];
  }

  async listen(endpoint: string, options: LinkSettings & { onLink(link: MeshLink): void }): Promise<LinkListener> {
    const inbox = await this.#inbox(endpointAddress(endpoint), options.window);
    if (inbox.listener) throw new HermesError(ErrorCode.INVALID_REQUEST, `this process already listens at ${endpoint}`, { reason: "endpoint in use" });
    // One inbound link for every sender (its peer is the broker), and one per capability queue.
    const queues = [inbox, ...(await Promise.all(this.#capabilities.map((capability) => this.#capabilityQueue(capability, options.window))))];
    const links = queues.map((queue) => new NatsLink(this, queue, undefined, { node: `nats:${this.options.mesh}` }));
    const cancels = this.#capabilities.map((capability, i) => this.#nc.subscribe(this.cancelSubjectOf(capability), {
      callback: (error, msg) => {
        const env = error ? undefined : this.decode(msg.data);
        // Not stored, so nothing to settle (seq 0); the member serving the request aborts it, the others find nothing.
        if (isValidEnvelope(env) && env.message_type === MessageType.CANCEL) links[i + 1]!.onEnvelope(env, 0, links[i + 1]!);
      },
    }));
    for (const link of links) options.onLink(link);
    for (const [i, link] of links.entries()) await queues[i]!.attach(link, true);
    return {
      endpoint,
      close: async () => {
        for (const subscription of cancels) subscription.unsubscribe();
        await Promise.all(links.map((link) => link.close()));
      },
    };
  }

  /**
   * Answers go to `reply_to` (no connection to come back on), so the first dial opens the inbox of
   * `settings.node`, whose deliveries go to the dialed links: an answer to the one that asked.
   */
  async dial(endpoint: string, settings: LinkSettings): Promise<MeshLink> {
    const address = endpointAddress(endpoint);
    if (!this.#connected || this.#nc.isClosed()) throw new HermesError(ErrorCode.UNAVAILABLE, `NATS at ${this.options.servers.join(", ")} is unreachable`, { retry_after_ms: 1000 });
    const home = await this.#inbox(settings.node, settings.window);
    const link = new NatsLink(this, home, this.subjectOf(address), { node: address });
    await home.attach(link, false);
    return link;
  }

  async close(): Promise<void> {
    for (const inbox of await Promise.allSettled(this.#inboxes.values())) if (inbox.status === "fulfilled") await inbox.value.close();
    this.#advisories.unsubscribe();
    await this.#nc.close();
  }

  /** Nats-Msg-Id is the envelope's id: a resend within the stream's duplicate window (120 s) is stored once. */
  /** Retried (same Nats-Msg-Id: stored once) for publishTimeoutMs while a cluster elects a stream leader. */
  async publish(subject: string, data: Uint8Array, msgID: string, header?: [string, string]): Promise<PubAck> {
    const h = header ? headers() : undefined;
    h?.set(header![0], header![1]);
    for (const until = Date.now() + this.options.publishTimeoutMs; ; await new Promise((resolve) => setTimeout(resolve, 200))) {
      try {
        return await this.js.publish(subject, data, { msgID, timeout: this.options.publishTimeoutMs, ...(h && { headers: h }) });
      } catch (error) {
        if ((error as Error).name === "JetStreamApiError" || Date.now() > until || this.#nc.isClosed()) throw error;
        // No stream takes the subject: a server back without its store. Make it again, then retry.
        if ((error as Error).name === "JetStreamNotEnabled") await this.recover().catch(() => {});
      }
    }
  }

  /**
   * The stream and every consumer of this process made again, once at a time: after a server
   * came back without its store (what it had stored is lost with it: replicate the stream, R3,
   * where that matters). Adding what exists changes nothing, so a false alarm costs two calls.
   */
  recover(): Promise<void> {
    return (this.#recovering ??= (async () => {
      await this.ensureStream();
      for (const inbox of await Promise.allSettled(this.#inboxes.values())) if (inbox.status === "fulfilled") await inbox.value.recreate();
    })().finally(() => (this.#recovering = undefined)));
  }

  /** A core NATS publish (nothing stored, nothing acknowledged): settled as soon as it is handed to the client. */
  async publishCore(subject: string, data: Uint8Array): Promise<void> {
    this.#nc.publish(subject, data);
  }

  /** Copied: the encoder reuses its buffer, and the client may write the bytes later. */
  encode = (env: Envelope): Uint8Array => this.#codec.encode(env).slice();

  /** The value in a message, or undefined when its bytes are not msgpack. */
  decode(data: Uint8Array): unknown {
    try { return this.#codec.decode(data); } catch { return undefined; }
  }

  #inbox(address: string, window = DEFAULT_WINDOW): Promise<Inbox> {
    return this.#open({ address, durable: addressToken(address), subject: this.subjectOf(address), window });
  }

  /** A capability's shared queue. */
  #capabilityQueue(capability: string, window = DEFAULT_WINDOW): Promise<Inbox> {
    const durable = `${CAPABILITY_DURABLE}${addressToken(capability)}`;
    return this.#open({ address: addressOfDurable(durable), durable, subject: this.subjectOf(capability, "cap"), window, pull: CAPABILITY_PULL });
  }

  #open(queue: Parameters<typeof Inbox.open>[1]): Promise<Inbox> {
    let inbox = this.#inboxes.get(queue.durable);
    if (!inbox) {
      this.#inboxes.set(queue.durable, (inbox = Inbox.open(this, queue)));
      inbox.catch(() => this.#inboxes.delete(queue.durable)); // the next link tries again
    }
    return inbox.catch((error) => Promise.reject(unavailable(`cannot open the inbox of ${queue.address} on NATS`, error)));
  }

  /**
   * A message of one of the mesh's inboxes reached max_deliver (a server before 2.10.22 says so
   * when someone pulls, a later one when its ack_wait ends, whoever listens). It moves to
   * `hermes.<mesh>.dead.<durable>` for an operator, which keeps the newest `deadLettersKept` (a
   * work queue nobody reads would otherwise grow without bound); a request's sender gets code 10
   * marked as a dead letter, which its link hands to onDeadLetter. The process reading that inbox
   * does it at once; every other process of the mesh a second later if the message is still there,
   * so that one is left even when the inbox's own process has gone.
   */
  async #deadLetter(advisory: { consumer: string; stream_seq: number; deliveries: number }): Promise<void> {
    const inbox = await this.#inboxes.get(advisory.consumer)?.catch(() => undefined);
    if (!inbox) await new Promise((resolve) => setTimeout(resolve, OTHERS_DEAD_LETTER_AFTER_MS));
    const durable = advisory.consumer;
    const address = inbox?.address ?? addressOfDurable(durable);
    // Gone: the inbox's own process (or another) moved it already.
    const stored = await this.jsm.streams.getMessage(this.stream, { seq: advisory.stream_seq }).catch(() => undefined);
    if (!stored) return;
    const error = new HermesError(ErrorCode.UNAVAILABLE, `gave up after ${advisory.deliveries} delivery attempts to ${address}`, { retry_after_ms: 1000, deliveries: advisory.deliveries });
    const id = `dead-${this.stream}-${advisory.stream_seq}`;
    // Every member serving a shared queue hears its advisory: the ids make the dead letter and the notice one each.
    const dead = `${this.#prefix}.dead.${durable}`;
    await this.publish(dead, stored.data, id, ["Hermes-Dead-Reason", error.message]);
    await this.jsm.streams.purge(this.stream, { filter: dead, keep: this.options.deadLettersKept }).catch(() => {});
    await this.jsm.streams.deleteMessage(this.stream, advisory.stream_seq).catch(() => {});
    const env = this.decode(stored.data);
    if (!isValidEnvelope(env) || env.message_type !== MessageType.REQUEST) return;
    const notice = createErrorReply(env, address, error);
    await this.publish(this.subjectOf(notice.target_agent!), this.encode(notice), `${id}-notice`, [DEAD_LETTER_HEADER, "max_deliver"]);
  }
}

/** `core`: published on core NATS, not stored (a cancel of what went to a capability queue). */
/** An envelope on its way to the broker; `since`: when it was handed over (its ttl counts down from then). */
type Outgoing = { env: Envelope; bytes: Uint8Array; subject: string; settles: number | undefined; since: number; core?: boolean };

/**
 * A link over the broker. Inbound (a listener's): every message for the member, sent on to each
 * `target_agent`. Dialed: sends to one address; its answers come through its node's inbox. In
 * flight until the PubAck (stored: the server redelivers from here), then onAcknowledged. An answer
 * acks the delivery it settles only once stored: a crash in between redelivers, losing nothing.
 */
class NatsLink implements MeshLink, InboxLink {
  readonly peer: { node: string };
  onAcknowledged: ((env: Envelope) => void) | undefined;
  onUnsendable: ((env: Envelope, error: HermesError) => void) | undefined;
  onDeadLetter: ((env: Envelope, error: HermesError) => void) | undefined;
  #transport: NatsTransport;
  #home: Inbox;
  /** The dialed address's subject; undefined on the inbound link. */
  #to: string | undefined;
  /** `closing`: nothing more is sent or delivered; what is in flight still gets its PubAck. */
  #open = true;
  #closing = false;
  #closed = Promise.withResolvers<void>();
  #closeError: HermesError | undefined;
  #handler: LinkEnvelopeHandler | undefined;
  #held: Array<[Envelope, number]> = [];
  #inFlight = new Map<Envelope, Outgoing>();
  /** Waiting for a publish slot, from #head on (a shift per publish would be quadratic). */
  #backlog: Outgoing[] = [];
  #head = 0;
  #published = 0;
  /** whenRoom and whenAcknowledged callers, woken when their condition holds or the link closes. */
  #waiters: Array<{ ready: () => boolean; resolve: () => void }> = [];

  constructor(transport: NatsTransport, home: Inbox, to: string | undefined, peer: { node: string }) {
    [this.#transport, this.#home, this.#to, this.peer] = [transport, home, to, peer];
  }

  get isOpen(): boolean { return this.#open && !this.#closing; }
  get closed(): Promise<void> { return this.#closed.promise; }
  get closeError(): HermesError | undefined { return this.#closeError; }
  get inFlight(): number { return this.#inFlight.size; }
  get backlogged(): number { return this.#backlog.length - this.#head; }
  get hasRoom(): boolean { return !this.#open || this.backlogged < MAX_IN_FLIGHT; }

  /** Until a handler is set, deliveries are held, and handed over in order when it is. */
  get onEnvelope(): LinkEnvelopeHandler { return this.#handler ?? ((env, seq) => this.#held.push([env, seq])); }
  set onEnvelope(handler: LinkEnvelopeHandler) {
    this.#handler = handler;
    for (const [env, seq] of this.#held.splice(0)) handler(env, seq, this);
  }

  /** Refuses at once, as a socket Connection: 10 when closed, 2 unencodable, 6 over max_payload (nothing published) or past the backlog. */
  send(env: Envelope, settles?: number): void {
    if (!this.isOpen) throw this.#closeError ?? new HermesError(ErrorCode.UNAVAILABLE, "link is closed", { retry_after_ms: 100 });
    checkPayload(env.payload);
    // Answers go to whoever asked; everything else to the dialed address (inbound: to its target).
    const to = this.#to === undefined || ANSWERS.has(env.message_type) ? env.target_agent : undefined;
    if (to === undefined && this.#to === undefined) throw new HermesError(ErrorCode.UNROUTABLE, "an envelope sent over NATS needs a target_agent", { target: env.topic ?? env.capability ?? "", known: [] });
    let bytes: Uint8Array;
    try {
      bytes = this.#transport.encode(env);
    } catch (error) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, `envelope cannot be encoded: ${(error as Error).message}`, { reason: (error as Error).message, expected: "a payload of MessagePack values" }, { cause: error });
    }
    const [used, limit] = [bytes.length + HEADER_BYTES, this.#transport.maxPayload];
    if (used > limit) throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, `message of ${used} bytes is over the NATS server's max_payload of ${limit}`, { resource: "max_payload", used, limit });
    if (this.backlogged >= MAX_BACKLOG) throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "send backlog full", { resource: "send_backlog", used: this.backlogged, limit: MAX_BACKLOG });
    if (this.#to !== undefined && env.message_type === MessageType.REQUEST) this.#home.expect(env, this);
    const out: Outgoing = { env, bytes, subject: to !== undefined ? this.#transport.subjectOf(to) : this.#to!, settles, since: Date.now() };
    // Routed by capability (no target_agent): to the capability's shared queue, whatever instance the router picked.
    if (to === undefined && env.target_agent === undefined && env.capability !== undefined) {
      const cancel = env.message_type === MessageType.CANCEL;
      [out.subject, out.core] = [cancel ? this.#transport.cancelSubjectOf(env.capability) : this.#transport.subjectOf(env.capability, "cap"), cancel];
    }
    if (this.#inFlight.size < MAX_IN_FLIGHT && this.backlogged === 0) this.#publish(out);
    else this.#backlog.push(out);
  }

  settle(seq: number): void { this.#home.settle(seq); }

  /** Resolves at once while there is room; else once the backlog is down to half the in-flight bound (or the link closed). */
  whenRoom(): Promise<void> {
    return this.hasRoom ? READY : this.#wait(() => this.backlogged <= MAX_IN_FLIGHT / 2);
  }

  /** Resolves true once every envelope sent has its PubAck (is stored); false after `timeoutMs` or a close. */
  async whenAcknowledged(timeoutMs = 5000): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.#wait(() => this.#inFlight.size + this.backlogged === 0), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
    return this.#inFlight.size + this.backlogged === 0;
  }

  /** Sent and not stored by the broker (no PubAck), oldest first, each ttl reduced by the time it waited here: what the owner resends. */
  unacknowledged(): Envelope[] {
    const now = Date.now();
    return [...this.#inFlight.values(), ...this.#backlog.slice(this.#head)].map((out) => takeWaitOff(out, now));
  }

  /** A clean close cancels the unanswered requests (as a closed socket aborts its handlers) and gives what is in flight a second. */
  async close(): Promise<void> {
    if (!this.isOpen) return this.#closed.promise;
    for (const request of this.#to !== undefined ? this.#home.requestsOf(this) : []) if (this.hasRoom) this.send(createCancel(request, "the requester closed its link"));
    this.#closing = true;
    this.#home.detach(this); // the answers to those cancels are not this link's to deliver
    await this.whenAcknowledged(1000);
    this.#finish(undefined);
  }

  #publish(out: Outgoing): void {
    this.#inFlight.set(out.env, out);
    out.env.seq = ++this.#published; // it went out: a resend counts as a new attempt (peer-link.ts)
    const sent = out.core ? this.#transport.publishCore(out.subject, out.bytes) : this.#transport.publish(out.subject, out.bytes, out.env.message_id);
    sent.then(() => this.#stored(out), (error) => this.#failed(out, error));
  }

  #stored(out: Outgoing): void {
    if (!this.#open) return;
    this.#inFlight.delete(out.env);
    if (out.settles !== undefined) this.#home.settle(out.settles);
    this.onAcknowledged?.(out.env);
    this.#pump();
  }

  /**
   * Refused by the server (an API error such as a stream limit): the link goes on, its owner answers
   * for it. No PubAck (timeout, server gone): a dialed link closes with code 10, its owner resends
   * under the same Nats-Msg-Id; the inbound link (the member's only one) stays and gives the request
   * it answered back to the stream, whose redelivery the dedupe memory answers again.
   */
  #failed(out: Outgoing, error: unknown): void {
    if (!this.#open) return;
    const refused = (error as Error).name === "JetStreamApiError";
    const reason = refused ? new HermesError(ErrorCode.RESOURCE_EXHAUSTED, `NATS refused the message: ${(error as Error).message}`, { resource: "stream" }) : unavailable(`publish to ${out.subject} not confirmed`, error);
    if (this.#to !== undefined && !refused) return this.#finish(reason);
    this.#inFlight.delete(out.env);
    if (out.settles !== undefined) this.#home.settle(out.settles, true);
    this.onUnsendable?.(out.env, reason);
    this.#pump();
  }

  #pump(): void {
    while (this.backlogged > 0 && this.#inFlight.size < MAX_IN_FLIGHT && this.#open) this.#publish(this.#backlog[this.#head++]!);
    if (this.#head > 4096 && this.#head * 2 > this.#backlog.length) [this.#backlog, this.#head] = [this.#backlog.slice(this.#head), 0];
    if (this.#waiters.length > 0) this.#wake();
  }

  #wait(ready: () => boolean): Promise<void> {
    return !this.#open || ready() ? READY : new Promise((resolve) => this.#waiters.push({ ready, resolve }));
  }

  #wake(): void {
    this.#waiters = this.#waiters.filter((waiter) => (!this.#open || waiter.ready() ? (waiter.resolve(), false) : true));
  }

  #finish(error: HermesError | undefined): void {
    if (!this.#open) return;
    [this.#open, this.#closeError] = [false, error];
    this.#home.detach(this);
    this.#wake();
    this.#closed.resolve();
  }
}
