import { joinMesh, type MeshMember } from "../../mesh/join.ts";
import type { RequestOptions } from "../../mesh/requests.ts";
import type { Registry } from "../../mesh/registry.ts";
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
  #member: MeshMember;

  private constructor(member: MeshMember) {
    this.address = member.address;
    this.registry = member.registry;
    this.#member = member;
  }

  static async open(options: WorkflowLinkOptions): Promise<WorkflowLink> {
    const deadline = Date.now() + (options.joinTimeoutMs ?? 10_000);
    for (let wait = 10; ; wait = Math.min(wait * 2, 500)) {
      try {
        // It listens: a node still running when the orchestrator was killed answers to this address.
        return new WorkflowLink(await joinMesh({
          dir: options.dir,
          address: options.address,
          listen: true,
          ...(options.token !== undefined && { token: options.token }),
          ...(options.onSent && { onSent: options.onSent }),
        }));
      } catch (error) {
        // After a kill -9 the supervisor may not yet have dropped the old registration.
        const taken = error instanceof HermesError && /is taken/.test(error.message);
        if (!taken || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, wait)); // not Bun.sleep: orchestrators run on Deno too
      }
    }
  }

  /** Sends a prebuilt request envelope (its `reply_to` must be this link's address) and waits for the answer. */
  request(envelope: Envelope, options: Pick<RequestOptions, "timeoutMs" | "signal" | "onProgress">): Promise<Envelope> {
    return this.#member.node.requestEnvelope(envelope, options);
  }

  /**
   * Routes the envelope now (the scheduler picks among the capability's or the pool's healthy
   * instances) and pins it to that instance in `target_agent`. Stored pinned, a request sent
   * again after a restart reaches the same instance, whose dedupe memory knows its message_id.
   * Throws code 8 when nothing can take it.
   */
  pin(envelope: Envelope): void {
    const [address] = this.#member.node.resolve(envelope);
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

  close(): Promise<void> {
    return this.#member.close();
  }
}
