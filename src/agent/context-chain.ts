import { z } from "zod";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { ChatMessage } from "./chat-types.ts";

/**
 * The context chain is the fix for "context drift" in multi-hop tasks: each hop used to pass on
 * only its own retelling of the task, so three hops later the original request was gone. The
 * chain travels in the request payload (`payload.context_chain`); its first hop is the
 * original request, verbatim, and it is never dropped.
 */

/** The payload field the chain travels in. */
export const CONTEXT_CHAIN_FIELD = "context_chain";
/** Hops kept after the first one by default. */
export const DEFAULT_MAX_HOPS = 8;
/** Longest summary of a later hop by default, in UTF-16 units. */
export const DEFAULT_MAX_SUMMARY = 2000;

// Hard caps on what a reader accepts, looser than the defaults so peers configured with larger
// bounds still interoperate, but a hostile payload cannot make a prompt unbounded.
const MAX_CHAIN_HOPS = 65;
const MAX_TEXT = 100_000;

/** One hop: who handled the task, when (ms since the epoch), and what it did or was asked. */
export const ContextHopSchema = z.object({
  actor: z.string().min(1).max(256),
  at: z.number().int().min(0),
  summary: z.string().max(MAX_TEXT),
});
/** A chain: the original request first, then the latest hops, oldest first. */
export const ContextChainSchema = z.array(ContextHopSchema).min(1).max(MAX_CHAIN_HOPS);

export type ContextHop = z.infer<typeof ContextHopSchema>;
export type ContextChain = z.infer<typeof ContextChainSchema>;

/** Bounds for `extendChain`. */
export interface ChainBounds {
  /** Hops kept after the original request. */
  maxHops?: number;
  /** Longest summary of a later hop; longer ones are cut and end with "…". */
  maxSummary?: number;
}

/**
 * Starts a chain from the original request; a non-string request is kept as its JSON text.
 * A request past 100,000 characters, or an empty actor, is a HermesError code 2.
 *
 * @example
 * const chain = startChain("write a function that counts days between two dates");
 * await ctx.request("planner", { task, context_chain: chain });
 */
export function startChain(originalRequest: unknown, actor = "user", at = Date.now()): ContextChain {
  const summary = typeof originalRequest === "string" ? originalRequest : JSON.stringify(originalRequest) ?? String(originalRequest);
  const parsed = ContextChainSchema.safeParse([{ actor, at, summary }]);
  if (!parsed.success) throw invalid(describe(parsed.error));
  return parsed.data;
}

/**
 * A new chain with one more hop (the given chain is not changed). The first hop always stays;
 * of the later ones only the newest `maxHops` do, and the new summary is cut to `maxSummary`.
 *
 * @example
 * const next = extendChain(chain, "planner", "split into: parse dates, count days, test");
 * chainToMessages(next)[0].content; // "Original request (from user): write a function ..."
 */
export function extendChain(chain: ContextChain, actor: string, summary: string, bounds: ChainBounds = {}): ContextChain {
  const maxHops = bounds.maxHops ?? DEFAULT_MAX_HOPS;
  const maxSummary = bounds.maxSummary ?? DEFAULT_MAX_SUMMARY;
  if (!Number.isInteger(maxHops) || maxHops < 0 || maxHops >= MAX_CHAIN_HOPS || !Number.isInteger(maxSummary) || maxSummary < 1) {
    throw new HermesError(ErrorCode.INVALID_REQUEST, "invalid context chain bounds", {
      reason: `maxHops must be an integer in 0..${MAX_CHAIN_HOPS - 1} and maxSummary a positive integer`,
    });
  }
  const [origin, ...later] = chain;
  if (!origin) throw invalid("the chain is empty: it must start with the original request");
  const hop = ContextHopSchema.safeParse({ actor, at: Date.now(), summary: truncate(summary, maxSummary) });
  if (!hop.success) throw invalid(describe(hop.error));
  const kept = maxHops === 0 ? [] : [...later, hop.data].slice(-maxHops);
  return [origin, ...kept];
}

/**
 * The chain as prompt messages: the original request first, then the hops so far.
 *
 * @example
 * const prompt = [systemPrompt, ...chainToMessages(chain), ...memory.messages(contextId)];
 */
export function chainToMessages(chain: ContextChain): ChatMessage[] {
  const [origin, ...later] = chain;
  if (!origin) return [];
  const messages: ChatMessage[] = [{ role: "system", content: `Original request (from ${origin.actor}): ${origin.summary}` }];
  if (later.length > 0) {
    const lines = later.map((h, i) => `${i + 1}. ${h.actor} (${new Date(h.at).toISOString()}): ${h.summary}`);
    messages.push({ role: "system", content: `Steps so far, oldest first:\n${lines.join("\n")}` });
  }
  return messages;
}

/**
 * Reads and validates `payload.context_chain`: undefined when absent, a HermesError code 2 with
 * `reason` when malformed.
 *
 * @example
 * const chain = readChain(envelope.payload) ?? startChain(envelope.payload);
 */
export function readChain(payload: unknown): ContextChain | undefined {
  if (typeof payload !== "object" || payload === null) return undefined;
  const value = (payload as Record<string, unknown>)[CONTEXT_CHAIN_FIELD];
  if (value === undefined) return undefined;
  const parsed = ContextChainSchema.safeParse(value);
  if (!parsed.success) throw invalid(describe(parsed.error));
  return parsed.data;
}

/**
 * A copy of the payload carrying the chain.
 *
 * @example
 * await ctx.request("coder", withChain({ step }, extendChain(chain, "planner", plan)));
 */
export function withChain<T extends Record<string, unknown>>(payload: T, chain: ContextChain): T & { context_chain: ContextChain } {
  return { ...payload, [CONTEXT_CHAIN_FIELD]: chain } as T & { context_chain: ContextChain };
}

/** Cuts at `max` UTF-16 units without splitting a surrogate pair, marking the cut with "…". */
function truncate(text: string, max: number): string {
  if (typeof text !== "string" || text.length <= max) return text;
  let end = Math.max(0, max - 1);
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

function describe(error: z.ZodError): string {
  const issue = error.issues[0]!;
  const where = issue.path.length > 0 ? `${CONTEXT_CHAIN_FIELD}.${issue.path.join(".")}` : CONTEXT_CHAIN_FIELD;
  return `${where}: ${issue.message}`;
}

function invalid(reason: string): HermesError {
  return new HermesError(ErrorCode.INVALID_REQUEST, `malformed context chain: ${reason}`, { reason, field: CONTEXT_CHAIN_FIELD });
}
