import { ControlClient } from "../../mesh/control-client.ts";
import { clientSocketPath } from "../../mesh/control-protocol.ts";
import { schedulerPicker } from "../../mesh/routing.ts";
import { MeshNode, type MeshRequestOptions } from "../../mesh/mesh-node.ts";
import { Registry } from "../../mesh/registry.ts";
import { schedulerFromEnv } from "../../mesh/scheduler.ts";
import type { Envelope } from "../../mesh/envelope.ts";
import { HermesError } from "../../mesh/errors.ts";
import type { Providers } from "./workflow-providers.ts";

/** How the orchestrator's link joins the mesh. */
export interface WorkflowLinkOptions {
  dir: string;
  /** Fixed across restarts: answers to requests sent before a crash find the new process by it. */
  address: string;
  token?: string;
  /** Each request routed, for the event log's "sent" lines. */
  onSent?: (env: Envelope, destinations: readonly string[]) => void;
  /** How long to retry joining while the previous process's registration is still being removed. */
  joinTimeoutMs?: number;
}

/**
 * The orchestrator's own mesh node, joined like a client under a stable address. Why not
 * `ctx.request`: a resumed run must send a node's request again with the SAME envelope (same
 * message_id, so the receiver deduplicates it and answers from its memory instead of running
 * the node twice), and only a node's `requestEnvelope` sends a prebuilt envelope. The stable
 * address matters too: a node still running when the orchestrator was killed answers the
 * envelope's `reply_to`, and the restarted orchestrator's connection is found under that name.
 *
 * @example
 * const link = await WorkflowLink.open({ dir, address: "orchestrator.wf" });
 * const answer = await link.request(envelope, { timeoutMs: 5000 });
 */
export class WorkflowLink {
  readonly address: string;
  readonly registry: Registry;
  #node: MeshNode;
  #control: ControlClient;

  private constructor(address: string, registry: Registry, node: MeshNode, control: ControlClient) {
    this.address = address;
    this.registry = registry;
    this.#node = node;
    this.#control = control;
  }

  static async open(options: WorkflowLinkOptions): Promise<WorkflowLink> {
    const registry = new Registry();
    const scheduler = schedulerFromEnv();
    const token = options.token !== undefined ? { token: options.token } : {};
    const socketPath = clientSocketPath(options.dir, options.address);
    const deadline = Date.now() + (options.joinTimeoutMs ?? 10_000);
    for (let wait = 10; ; wait = Math.min(wait * 2, 500)) {
      const control = await ControlClient.connect({ dir: options.dir, address: options.address, registry, ...token });
      let node: MeshNode | undefined;
      try {
        node = await MeshNode.start({
          address: options.address,
          socketPath,
          routes: registry,
          pick: schedulerPicker(scheduler, (address) => node?.inFlightTo(address) ?? 0),
          onOutcome: (address, ok, latencyMs) => scheduler.record(address, { ok, latencyMs }),
          ...(options.onSent && { onSent: options.onSent }),
          ...token,
        });
        registry.onUpdate((update) => {
          if (update.type === "remove") node?.forget(update.address);
          if ((update.type === "patch" && update.changes.health === "healthy") || (update.type === "upsert" && update.entry.health === "healthy")) {
            node?.notifyUp(update.type === "patch" ? update.address : update.entry.address);
          }
        });
        await control.join(socketPath, []);
        return new WorkflowLink(options.address, registry, node, control);
      } catch (error) {
        await node?.close();
        await control.close();
        // After a kill -9 the supervisor may not yet have dropped the old registration.
        const taken = error instanceof HermesError && /is taken/.test(error.message);
        if (!taken || Date.now() > deadline) throw error;
        await Bun.sleep(wait);
      }
    }
  }

  /** Sends a prebuilt request envelope (its `reply_to` must be this link's address) and waits for the answer. */
  request(envelope: Envelope, options: Pick<MeshRequestOptions, "timeoutMs" | "signal" | "onProgress">): Promise<Envelope> {
    return this.#node.requestEnvelope(envelope, options);
  }

  /**
   * Routes the envelope now (the scheduler picks among the capability's or the pool's healthy
   * instances) and pins it to that instance in `target_agent`. Stored pinned, a request sent
   * again after a restart reaches the same instance, whose dedupe memory knows its message_id.
   * Throws code 8 when nothing can take it.
   */
  pin(envelope: Envelope): void {
    const [address] = this.#node.resolve(envelope);
    envelope.target_agent = address;
  }

  /** The running mesh as a provider check sees it. */
  providers(): Providers {
    const registry = this.registry;
    return {
      where: "the running mesh",
      hasCapability: (c) => registry.withCapability(c).length > 0,
      hasTarget: (t) => registry.resolveTarget(t).length > 0,
      capabilities: () => [...new Set(registry.snapshot().flatMap((e) => e.capabilities))].sort(),
    };
  }

  async close(): Promise<void> {
    await this.#node.close();
    await this.#control.close();
  }
}
