/**
 * A member's inbox on NATS JetStream (docs/nats.md): one durable pull consumer and what it
 * delivered, until each delivery is settled (acked after handling). A member has one for its
 * address, and one for each capability it serves: that capability's queue, shared by every
 * member serving it, so the first with room takes the next job.
 */
import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { type Envelope, isValidEnvelope, MessageType } from "./envelope.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import type { MeshLink } from "./transport.ts";

/** Requests remembered to route their answers back to the link that sent them. */
const MAX_ASKED = 100_000;
/** Marks an error answer as the broker giving up on a request (max deliveries), not as its handler's answer. */
export const DEAD_LETTER_HEADER = "Hermes-Dead-Letter";
export const ANSWERS: ReadonlySet<string> = new Set([MessageType.RESPONSE, MessageType.ERROR, MessageType.PROGRESS]);

/** What an inbox uses of its transport. */
export interface InboxTransport {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly stream: string;
  readonly options: { ackWaitMs: number; maxDeliver: number };
  decode(data: Uint8Array): unknown;
  /** The stream or a consumer is gone (a server lost its store): make them again. */
  recover(): Promise<void>;
}

/** What a consumer's status says when the server no longer has its stream or itself. */
const LOST: ReadonlySet<string> = new Set(["stream_not_found", "consumer_not_found", "consumer_deleted"]);

/** What an inbox hands deliveries to: a link of its transport. */
export interface InboxLink extends MeshLink {
  readonly isOpen: boolean;
  onDeadLetter: ((env: Envelope, error: HermesError) => void) | undefined;
}

/** Which consumer: its name, the subject it reads, its credit window and how many it pulls at once. */
export interface InboxQueue {
  address: string;
  durable: string;
  subject: string;
  window: number;
  /** Messages pulled ahead (default min(window, 512)); a shared capability queue pulls few, so a busy member leaves the rest to others. */
  pull?: number;
}

/**
 * A member's inbox in this process: its durable consumer (one per member, never per request: in a
 * cluster each is a Raft group), the unsettled deliveries, the links they go to. It consumes only
 * while a link is attached: a closed member's messages go back for its next life.
 */
export class Inbox {
  /** The member's address, or `capability:<name>` for a capability's shared queue. */
  readonly address: string;
  /** The durable consumer's name. */
  readonly durable: string;
  listener: InboxLink | undefined;
  #transport: InboxTransport;
  #window: number;
  #pull: number;
  #dialed = new Set<InboxLink>();
  #messages: Promise<ConsumerMessages> | undefined;
  #seq = 0;
  #unsettled = new Map<number, { msg: JsMsg; at: number }>();
  #held: Array<[Envelope, number]> = [];
  /** Requests sent by this node's dialed links, by message_id: their answers go back to that link. */
  #asked = new Map<string, { link: InboxLink; request: Envelope }>();
  #sweep: ReturnType<typeof setInterval> | undefined;

  #queue: InboxQueue;

  private constructor(transport: InboxTransport, queue: InboxQueue) {
    [this.#transport, this.address, this.durable, this.#window, this.#pull, this.#queue] = [transport, queue.address, queue.durable, queue.window, queue.pull ?? Math.min(queue.window, 512), queue];
  }

  /**
   * max_ack_pending is the credit window: at most `window` unsettled messages, whoever sent them.
   * Adding an existing durable updates it (2.9), and two processes adding it at once both succeed.
   */
  static async open(transport: InboxTransport, queue: InboxQueue): Promise<Inbox> {
    await Inbox.#add(transport, queue);
    return new Inbox(transport, queue);
  }

  static async #add(transport: InboxTransport, queue: InboxQueue): Promise<void> {
    const { options, jsm, stream } = transport;
    await jsm.consumers.add(stream, {
      durable_name: queue.durable, filter_subject: queue.subject, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All,
      max_ack_pending: queue.window, ack_wait: options.ackWaitMs * 1_000_000, max_deliver: options.maxDeliver,
    });
  }

  /** Makes the consumer again (the server lost it): its pulls, which keep trying, then get messages again. */
  recreate(): Promise<void> {
    return Inbox.#add(this.#transport, this.#queue);
  }

  /** Adds a link and makes sure the consumer pulls (code 10 when it cannot). */
  async attach(link: InboxLink, listener: boolean): Promise<void> {
    if (listener) this.listener = link;
    else this.#dialed.add(link);
    for (const [env, seq] of this.#held.splice(0)) this.#route(env, seq);
    await (this.#messages ??= this.#consume()).catch((error) => {
      this.#messages = undefined;
      this.detach(link);
      throw new HermesError(ErrorCode.UNAVAILABLE, `cannot consume the inbox of ${this.address}: ${(error as Error).message}`, { retry_after_ms: 1000 }, { cause: error });
    });
  }

  detach(link: InboxLink): void {
    if (this.listener === link) this.listener = undefined;
    this.#dialed.delete(link);
    for (const [id, asked] of this.#asked) if (asked.link === link) this.#asked.delete(id);
    if (!this.listener && this.#dialed.size === 0) void this.#stop();
  }

  /** Remembers a request sent on `link` so that its answer finds the link; the oldest are forgotten first. */
  expect(request: Envelope, link: InboxLink): void {
    this.#asked.set(request.message_id, { link, request });
    if (this.#asked.size > MAX_ASKED) this.#asked.delete(this.#asked.keys().next().value!);
  }

  requestsOf = (link: InboxLink): Envelope[] => [...this.#asked.values()].filter((a) => a.link === link).map((a) => a.request);

  /** Acks a delivery once handled (`nak`: gives it back for redelivery now, its answer not stored). */
  settle(seq: number, nak = false): void {
    const msg = this.#unsettled.get(seq)?.msg;
    this.#unsettled.delete(seq);
    if (nak) msg?.nak(); else msg?.ack(); // acked: from here the server forgets it (work queue)
  }

  async close(): Promise<void> {
    await Promise.all([...this.#dialed, ...(this.listener ? [this.listener] : [])].map((link) => link.close()));
    await this.#stop();
  }

  async #consume(): Promise<ConsumerMessages> {
    const consumer = await this.#transport.js.consumers.get(this.#transport.stream, this.durable);
    // Pulls expire every 5 s (heartbeats at 2.5): a pull lost with a cluster's consumer leader is noticed in seconds, not 30.
    const messages = await consumer.consume({ max_messages: this.#pull, expires: 5000, callback: (msg) => this.#arrive(msg) });
    // A server back without its store: the client's pulls go on trying, and say what is missing.
    void (async () => {
      for await (const status of messages.status()) if (LOST.has(status.type)) void this.#transport.recover().catch(() => {});
    })().catch(() => {});
    this.#sweep ??= setInterval(() => this.#touch(), Math.max(100, this.#transport.options.ackWaitMs / 3));
    (this.#sweep as { unref?: () => void }).unref?.();
    return messages;
  }

  async #stop(): Promise<void> {
    const messages = this.#messages;
    [this.#messages, this.#held] = [undefined, []];
    clearInterval(this.#sweep);
    this.#sweep = undefined;
    // Handed back at once for the member's next life rather than after ack_wait; but not a last
    // delivery: its nak would end it now, when the server's max-deliveries advisory would reach
    // only this closing process, and it would stay in the stream, never delivered nor dead-lettered.
    // Left to its ack_wait, it is dead-lettered by the process that pulls next.
    const last = this.#transport.options.maxDeliver;
    for (const { msg } of this.#unsettled.values()) if (msg.info.deliveryCount < last) msg.nak();
    this.#unsettled.clear();
    await messages?.then((m) => m.close(), () => {});
  }

  /**
   * What this process holds is extended (`working()`) every third of ack_wait while it lives: ack_wait
   * means "the process is gone", as a broken socket does, not "the handler is slow". (Extending on
   * progress only would redeliver a long request without progress, or an event awaiting done().)
   */
  #touch(): void {
    const now = Date.now();
    for (const entry of this.#unsettled.values()) {
      if (now - entry.at < this.#transport.options.ackWaitMs / 3) continue;
      entry.at = now;
      entry.msg.working();
    }
  }

  #arrive(msg: JsMsg): void {
    const env = this.#transport.decode(msg.data);
    if (!isValidEnvelope(env)) return msg.term(); // what cannot be read now never can: not redelivered
    // The broker's redeliveries count as attempts, on top of the sender's own resends.
    if (msg.info.deliveryCount > 1) env.attempt = (env.attempt ?? 1) + msg.info.deliveryCount - 1;
    // Time spent in the stream, by the server's store time: exact with synchronised clocks, never added.
    env.ttl -= Math.max(0, Date.now() - Math.floor(msg.info.timestampNanos / 1e6));
    delete env.seq;
    const seq = ++this.#seq;
    this.#unsettled.set(seq, { msg, at: Date.now() });
    const asked = env.correlation_id !== undefined && msg.headers?.has(DEAD_LETTER_HEADER) ? this.#asked.get(env.correlation_id) : undefined;
    if (asked?.link.onDeadLetter) {
      this.#asked.delete(env.correlation_id!);
      this.settle(seq);
      return asked.link.onDeadLetter(asked.request, HermesError.fromWire(env));
    }
    this.#route(env, seq);
  }

  #route(env: Envelope, seq: number): void {
    const id = env.correlation_id;
    const asked = id !== undefined && ANSWERS.has(env.message_type) ? this.#asked.get(id) : undefined;
    if (asked && env.message_type !== MessageType.PROGRESS) this.#asked.delete(id!);
    let link = asked?.link.isOpen ? asked.link : this.listener;
    if (!link) for (const dialed of this.#dialed) if (dialed.isOpen) link = dialed;
    if (link) link.onEnvelope(env, seq, link);
    else this.#held.push([env, seq]);
  }
}
