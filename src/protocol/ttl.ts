import type { Envelope } from "./envelope.ts";

/**
 * TTL arithmetic (docs/protocol.md §3). `ttl` is the remaining life in ms when the envelope
 * left its last hop. A holder measures its own elapsed time from when it received the envelope,
 * so no clocks need to agree across hosts.
 */

/** True when an envelope arrived with no life left. */
export function arrivedExpired(env: Pick<Envelope, "ttl">): boolean {
  return env.ttl <= 0;
}

/** Remaining life in ms of an envelope received at `receivedAt`, as of `now` (may be <= 0). */
export function remainingTtl(env: Pick<Envelope, "ttl">, receivedAt: number, now: number = Date.now()): number {
  return env.ttl - Math.max(0, now - receivedAt);
}

/** The local deadline (ms since epoch) by which an envelope received at `receivedAt` must be handled. */
export function ttlDeadline(env: Pick<Envelope, "ttl">, receivedAt: number): number {
  return receivedAt + env.ttl;
}

/**
 * The envelope as a forwarder passes it on: `ttl` reduced by the time it was held, at least
 * 1 ms per hop so a routing loop always runs out; everything else, `trace_id` above all,
 * unchanged. Returns null when nothing is left: the caller drops it (and answers a request
 * with code 9).
 *
 * @example
 * const next = forwardEnvelope(env, receivedAt); // env.ttl 5000, held 3 ms -> next.ttl 4997
 */
export function forwardEnvelope<T extends Envelope>(env: T, receivedAt: number, now: number = Date.now()): T | null {
  const ttl = env.ttl - Math.max(1, now - receivedAt);
  if (ttl <= 0) return null;
  const next = { ...env, ttl };
  delete next.seq;
  return next;
}
