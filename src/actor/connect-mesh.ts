import { joinMesh, joinOverNats, type NatsJoinOptions } from "../../mesh/join.ts";
import type { DeadLetter, DeadLetterLimits } from "../../mesh/mesh-node.ts";
import type { RequestOptions } from "../../mesh/requests.ts";
import type { Registry } from "../../mesh/registry.ts";
import { topicMatches } from "../../mesh/topics.ts";
import type { EnvelopeOptions, Envelope, Payload } from "../../mesh/envelope.ts";
import { newMessageId } from "../../mesh/ids.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { MeshNode } from "../../mesh/mesh-node.ts";
import { toRoute, type Destination } from "./actor-context.ts";

/** A program's handle on a running mesh. */
export interface MeshClient {
  /** This client's address in the mesh. */
  readonly address: string;
  /** Sends a request; resolves with the response envelope, rejects with a HermesError. */
  request(to: Destination, payload: Payload, options?: RequestOptions): Promise<Envelope>;
  /**
   * Sends an event to one destination. The promise is backpressure: it resolves at once while
   * the destination has room, later when it has taken enough. Await it in a loop and the loop
   * never piles up or fails; ignore it and sends past the hard limit throw code 6.
   *
   * @example
   * for (let i = 0; i < 1_000_000; i++) await mesh.send("sink", { i });
   */
  send(to: Destination, payload: Payload, options?: EnvelopeOptions): Promise<void>;
  /** Publishes an event to every subscriber of `topic`; returns how many actors it went to. Pair with `writable()` in a loop. */
  publish(topic: string, payload: Payload, options?: EnvelopeOptions): number;
  /**
   * Resolves at once while every destination has room, else once they have taken enough.
   *
   * @example
   * for (const reading of readings) {
   *   mesh.publish("sensors.temp", reading);
   *   await mesh.writable();
   * }
   */
  writable(): Promise<void>;
  /** Receives events on topics matching `pattern` (`*` one level, `#` any levels). Returns an unsubscribe function. */
  subscribe(pattern: string, handler: (event: Envelope) => void): Promise<() => Promise<void>>;
  /** Envelopes this client gave up on after `maxAttempts` deliveries, newest last. */
  deadLetters(): readonly DeadLetter[];
  /** The registry as this client sees it. */
  readonly registry: Registry;
  close(): Promise<void>;
}

/** Where connectMesh finds the mesh and how it proves itself. */
export interface ConnectMeshOptions {
  /** The mesh's socket directory (on a host of the mesh). */
  dir?: string;
  /**
   * Instead of `dir`: join a mesh over NATS JetStream directly, from a machine with no
   * supervisor of the mesh (docs/nats.md). Credentials come from the variables it names.
   */
  nats?: NatsJoinOptions["nats"];
  /** Mesh token, when the mesh requires one. */
  token?: string;
  /** Address prefix of this client. Default "client". */
  name?: string;
  /**
   * How much of what this client gave up on it keeps for `deadLetters()`: 1,000 letters and
   * 64 MiB of their payloads by default; past the bytes the oldest letters keep no payload
   * (`payloadDroppedBytes` says how big it was). A long-running producer of big payloads sets less.
   */
  deadLetters?: DeadLetterLimits;
}

/**
 * Joins a running mesh from outside its supervisor tree (a script, a test, the CLI): requests,
 * events and topic subscriptions, routed peer to peer like an actor's, with the same delivery
 * guarantees. Rejects with code 10 when no mesh runs in `dir`, 5 for a wrong token; a failed
 * connect leaves nothing behind (no socket file, no open handle).
 *
 * @example
 * const mesh = await connectMesh({ dir: "/tmp/hermes-mesh-demo" });
 * const reply = await mesh.request("echo", { text: "hi" }, { timeoutMs: 2000 });
 * await mesh.close();
 */
export async function connectMesh(options: ConnectMeshOptions): Promise<MeshClient> {
  const address = `${options.name ?? "client"}-${newMessageId().slice(-10).toLowerCase()}`;
  const subscriptions = new Map<string, Set<(event: Envelope) => void>>();
  const onEvent: NatsJoinOptions["onEvent"] = (event) => {
    const envelope = event.envelope;
    try {
      for (const [pattern, handlers] of subscriptions) {
        if (envelope.topic !== undefined && topicMatches(pattern, envelope.topic)) for (const handler of handlers) handler(envelope);
      }
    } finally {
      event.done();
    }
  };
  const patterns = () => [...subscriptions.keys()];
  let node: MeshNode;
  let registry: Registry;
  let setSubscriptions: (patterns: string[]) => Promise<void>;
  let close: () => Promise<void>;
  if (options.nats) {
    const member = await joinOverNats({ address, nats: options.nats, onEvent, ...(options.deadLetters && { deadLetters: options.deadLetters }) });
    ({ node, registry } = member);
    setSubscriptions = async (list) => member.subscribe(list);
    close = () => member.close();
  } else {
    if (!options.dir) throw new HermesError(ErrorCode.INVALID_REQUEST, "connectMesh needs the mesh's `dir` (or `nats` for a mesh over NATS)", { reason: "no dir", expected: "{ dir } or { nats: { servers, mesh } }" });
    // It listens: events on its subscriptions are delivered to it.
    const member = await joinMesh({ dir: options.dir, address, listen: true, ...(options.token !== undefined && { token: options.token }), ...(options.deadLetters && { deadLetters: options.deadLetters }), onEvent });
    ({ node, registry } = member);
    setSubscriptions = (list) => member.control.subscribe(list);
    close = () => member.close();
  }
  return {
    address,
    registry,
    request: (to, payload, requestOptions) => node.request(toRoute(to), payload, requestOptions),
    send: (to, payload, eventOptions) => node.send(toRoute(to), payload, eventOptions),
    writable: () => node.writable(),
    publish: (topic, payload, eventOptions) => node.publish(topic, payload, eventOptions),
    deadLetters: () => node.deadLetters(),
    async subscribe(pattern, handler) {
      let handlers = subscriptions.get(pattern);
      if (!handlers) subscriptions.set(pattern, (handlers = new Set()));
      handlers.add(handler);
      await setSubscriptions(patterns());
      return async () => {
        handlers.delete(handler);
        if (handlers.size === 0) subscriptions.delete(pattern);
        await setSubscriptions(patterns());
      };
    },
    close,
  };
}
