import type { Envelope, Payload } from "../../mesh/envelope.ts";
import type { CapabilityInfo } from "../../mesh/registry.ts";
import type { ActorContext, InitContext } from "./actor-context.ts";

/**
 * What an actor module exports (as its default export): its handlers and defaults. The mesh
 * file names the actor and may add capabilities, subscriptions and settings; what the module
 * declares here is merged in.
 */
export interface ActorDefinition<State = unknown> {
  /** Default name when the mesh file does not give one. */
  name?: string;
  /** Capabilities this actor serves (capability routing). */
  capabilities?: readonly string[];
  /**
   * What callers outside the mesh should know about a capability: a description and the JSON
   * Schema of the request payload. The gateway publishes each as an A2A skill and each one
   * with an `inputSchema` as an MCP tool (docs/interop.md). Keys must be capabilities the actor serves.
   */
  capabilityInfo?: Readonly<Record<string, CapabilityInfo>>;
  /** Topic patterns whose events this actor receives (`*` one level, `#` any levels). */
  subscribe?: readonly string[];
  /** Handlers running at once. Default 1. */
  concurrency?: number;
  /** Keep the outbox and dedupe set in SQLite (bun:sqlite, or node:sqlite on Deno) so a crash of this actor loses nothing either. */
  durable?: boolean;
  /** Builds the actor's state when the process starts (also after every restart). */
  init?(ctx: InitContext): State | Promise<State>;
  /** Answers a request: return the response payload, or throw (a HermesError keeps its code; anything else is code 7). */
  onRequest?(request: Envelope, ctx: ActorContext<State>): Payload | Promise<Payload>;
  /** Handles an event (a topic publication or a direct send). */
  onEvent?(event: Envelope, ctx: ActorContext<State>): void | Promise<void>;
  /** Runs on a clean shutdown, after the last handler finished. */
  onStop?(ctx: InitContext & { state: State }): void | Promise<void>;
}

/**
 * Declares an actor. The module's default export is what the actor host runs, one process
 * per instance.
 *
 * @example
 * // actors/echo.ts
 * export default defineActor({
 *   capabilities: ["echo"],
 *   onRequest: (request) => request.payload,
 * });
 */
export function defineActor<State = undefined>(definition: ActorDefinition<State>): ActorDefinition<State> {
  if (definition.concurrency !== undefined && !(Number.isInteger(definition.concurrency) && definition.concurrency >= 1)) {
    throw new TypeError(`defineActor: concurrency must be a positive integer, got ${definition.concurrency}`);
  }
  if (!definition.onRequest && !definition.onEvent && !definition.init) {
    throw new TypeError("defineActor: an actor needs at least one of onRequest, onEvent or init");
  }
  return definition;
}
