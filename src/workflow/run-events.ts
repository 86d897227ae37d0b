import type { Envelope, Payload } from "../../mesh/envelope.ts";
import type { NodeStatus, RunStatus } from "./workflow-store.ts";

/**
 * What a run reports as it goes; the orchestrator sends each as a progress message to whoever
 * asked for the run.
 *
 * @example
 * // { type: "node", run_id, node: "image", status: "retry_wait", attempt: 1, round: 1, retry_in_ms: 50 }
 */
export type RunEvent =
  | { type: "run"; run_id: string; status: RunStatus; workflow: string; trace_id: string; error?: Record<string, unknown> }
  | { type: "node"; run_id: string; node: string; status: NodeStatus; attempt: number; round: number; error?: Record<string, unknown>; retry_in_ms?: number; resent?: boolean }
  | { type: "node_progress"; run_id: string; node: string; progress: Payload }
  | { type: "send_back"; run_id: string; node: string; to: string[]; round: number };

/** How a run sends a node's request: a mesh link that sends prebuilt envelopes (workflow-link.ts). */
export interface RequestSender {
  readonly address: string;
  /** Chooses the instance now and writes it into the envelope (throws code 8 when there is none). */
  pin(envelope: Envelope): void;
  request(envelope: Envelope, options: { timeoutMs: number; signal: AbortSignal; onProgress: (payload: Payload) => void }): Promise<Envelope>;
}

/**
 * The listeners of one run. A listener that throws (its requester is gone) does not stop the
 * run or the other listeners.
 *
 * @example
 * const events = new RunEvents();
 * const stop = events.subscribe((e) => console.log(e.type));
 * events.emit({ type: "send_back", run_id, node: "validate", to: ["caption"], round: 2 });
 */
export class RunEvents {
  #listeners = new Set<(event: RunEvent) => void>();

  subscribe(listener: (event: RunEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(event: RunEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // The listener's problem, not the run's.
      }
    }
  }
}
