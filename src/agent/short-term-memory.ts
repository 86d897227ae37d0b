import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { ChatMessage } from "./chat-types.ts";

/** Turns older messages into one text (a summariser actor, or the agent's own model). */
export type Summariser = (messages: ChatMessage[], signal: AbortSignal) => Promise<string>;

/** How a short-term memory is bounded. */
export interface ShortTermMemoryOptions {
  /** Messages per context (the summary counts as one) before it is compressed. Default 50. */
  limit?: number;
  /** Newest messages always kept verbatim. Default 20. */
  keep?: number;
  /** Contexts kept; the least recently used is evicted past it. Default 1,000. */
  maxContexts?: number;
  /** Messages a context may hold while a compression is in flight. Default 2 × limit. */
  hardLimit?: number;
  /** Without one, the oldest messages past `limit` are simply dropped. */
  summarise?: Summariser;
  /** A summariser slower than this counts as failed. Default 30 s. */
  summariseTimeoutMs?: number;
}

/** Counters over all contexts. */
export interface ShortTermStats {
  contexts: number;
  messages: number;
  compressing: number;
  compressions: number;
  compressionFailures: number;
  /** Messages dropped without being summarised (failed compressions, overflow, no summariser). */
  dropped: number;
  evictions: number;
  lastFailure?: { contextId: string; error: string; at: number };
}

/** The first line of a summary message's content; `isSummary` looks for it. */
export const SUMMARY_MARKER = "[summary of earlier messages]";

/**
 * True for the system message a compression put in place of older messages.
 *
 * @example
 * memory.messages("ctx-1").filter((m) => !isSummary(m)); // only the verbatim messages
 */
export function isSummary(message: ChatMessage): boolean {
  return message.role === "system" && (message.content ?? "").startsWith(SUMMARY_MARKER);
}

interface Entry { seq: number; message: ChatMessage }
interface Context {
  entries: Entry[];
  summary: string | null;
  /** Entries with a seq below this are being summarised right now. */
  cutoff: number;
  inFlight: Promise<void> | null;
}

/**
 * Conversation messages per context_id, bounded twice: past `limit` messages a context is
 * compressed (everything but the newest `keep` becomes ONE summary message from the
 * summariser), and past `maxContexts` the least recently used context is evicted. `add` never
 * waits: compression runs in the background, messages added meanwhile are kept in order, and a
 * failed or slow summariser only costs the older messages, never the newest `keep`.
 *
 * @example
 * const memory = new ShortTermMemory({ summarise: (msgs) => model.summarise(msgs) });
 * memory.add("ctx-1", { role: "user", content: "hello" });
 * const prompt = [system, ...memory.messages("ctx-1")];
 */
export class ShortTermMemory {
  readonly limit: number;
  readonly keep: number;
  readonly maxContexts: number;
  readonly hardLimit: number;
  #summarise?: Summariser;
  #timeoutMs: number;
  #contexts = new Map<string, Context>(); // insertion order is recency order
  #seq = 0;
  #counters = { compressions: 0, compressionFailures: 0, dropped: 0, evictions: 0 };
  #lastFailure?: ShortTermStats["lastFailure"];

  constructor(options: ShortTermMemoryOptions = {}) {
    this.limit = options.limit ?? 50;
    this.keep = options.keep ?? 20;
    this.maxContexts = options.maxContexts ?? 1000;
    this.hardLimit = options.hardLimit ?? 2 * this.limit;
    this.#summarise = options.summarise;
    this.#timeoutMs = options.summariseTimeoutMs ?? 30_000;
    const ok = (n: number, min: number) => Number.isInteger(n) && n >= min;
    if (!ok(this.keep, 0) || !ok(this.limit, this.keep + 1) || !ok(this.hardLimit, this.limit) || !ok(this.maxContexts, 1) || !(this.#timeoutMs > 0)) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, "invalid short-term memory bounds", {
        reason: "need integers with 0 <= keep, keep < limit <= hardLimit, maxContexts >= 1, summariseTimeoutMs > 0",
      });
    }
  }

  /**
   * Appends a message to a context (creating it, maybe evicting the least recently used one).
   *
   * @example
   * memory.add("ctx-1", { role: "assistant", content: "hi" });
   */
  add(contextId: string, message: ChatMessage): void {
    if (typeof contextId !== "string" || contextId === "") {
      throw new HermesError(ErrorCode.INVALID_REQUEST, "context id must be a non-empty string", { reason: "empty context id" });
    }
    let ctx = this.#touch(contextId);
    if (!ctx) {
      ctx = { entries: [], summary: null, cutoff: 0, inFlight: null };
      this.#contexts.set(contextId, ctx);
      this.#evict();
    }
    ctx.entries.push({ seq: ++this.#seq, message });
    this.#overflow(ctx);
    this.#maybeCompress(contextId, ctx);
  }

  /**
   * The context's window: the summary (if any) first, then the messages verbatim, oldest first.
   *
   * @example
   * memory.messages("ctx-1"); // [{ role: "system", content: "[summary of earlier messages]\n..." }, ...]
   */
  messages(contextId: string): ChatMessage[] {
    const ctx = this.#touch(contextId);
    if (!ctx) return [];
    const recent = ctx.entries.map((e) => e.message);
    return ctx.summary === null ? recent : [{ role: "system", content: `${SUMMARY_MARKER}\n${ctx.summary}` }, ...recent];
  }

  /** Forgets a context; a compression in flight for it is discarded when it ends. */
  clear(contextId: string): void {
    this.#contexts.delete(contextId);
  }

  /**
   * Resolves when no compression is in flight for the context (or for any context).
   *
   * @example
   * await memory.settled("ctx-1"); // before a prompt that should see the fresh summary
   */
  async settled(contextId?: string): Promise<void> {
    for (;;) {
      const ctxs = contextId === undefined ? [...this.#contexts.values()] : [this.#contexts.get(contextId)];
      const pending = ctxs.map((c) => c?.inFlight).filter((p): p is Promise<void> => p != null);
      if (pending.length === 0) return;
      await Promise.all(pending);
    }
  }

  /** Counters over all contexts, for metrics and tests. */
  stats(): ShortTermStats {
    let messages = 0;
    let compressing = 0;
    for (const ctx of this.#contexts.values()) {
      messages += ctx.entries.length + (ctx.summary === null ? 0 : 1);
      if (ctx.inFlight) compressing++;
    }
    const stats: ShortTermStats = { contexts: this.#contexts.size, messages, compressing, ...this.#counters };
    if (this.#lastFailure) stats.lastFailure = { ...this.#lastFailure };
    return stats;
  }

  #touch(contextId: string): Context | undefined {
    const ctx = this.#contexts.get(contextId);
    if (ctx) {
      this.#contexts.delete(contextId);
      this.#contexts.set(contextId, ctx);
    }
    return ctx;
  }

  #evict(): void {
    while (this.#contexts.size > this.maxContexts) {
      this.#contexts.delete(this.#contexts.keys().next().value!);
      this.#counters.evictions++;
    }
  }

  #size(ctx: Context): number {
    return ctx.entries.length + (ctx.summary === null ? 0 : 1);
  }

  /** Keeps memory bounded whatever the summariser does: plain truncation past the hard limit. */
  #overflow(ctx: Context): void {
    const cap = this.#summarise ? this.hardLimit : this.limit;
    while (this.#size(ctx) > cap && ctx.entries.length > this.keep) {
      const [gone] = ctx.entries.splice(0, 1);
      // Entries being summarised are covered by the summary if it comes; the rest are lost now.
      if (gone!.seq >= ctx.cutoff) this.#counters.dropped++;
    }
  }

  #maybeCompress(contextId: string, ctx: Context): void {
    if (!this.#summarise || ctx.inFlight || this.#size(ctx) <= this.limit) return;
    const batch = ctx.entries.slice(0, ctx.entries.length - this.keep);
    ctx.cutoff = batch.at(-1)!.seq + 1;
    const input = ctx.summary === null ? [] : [{ role: "system" as const, content: `${SUMMARY_MARKER}\n${ctx.summary}` }];
    ctx.inFlight = this.#run([...input, ...batch.map((e) => e.message)]).then(
      (summary) => this.#finish(contextId, ctx, batch.length, summary, undefined),
      (error) => this.#finish(contextId, ctx, batch.length, undefined, error),
    );
  }

  async #run(messages: ChatMessage[]): Promise<string> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`summariser timed out after ${this.#timeoutMs} ms`)), this.#timeoutMs);
    try {
      const aborted = new Promise<never>((_, reject) => abort.signal.addEventListener("abort", () => reject(abort.signal.reason)));
      const summary = await Promise.race([this.#summarise!(messages, abort.signal), aborted]);
      if (typeof summary !== "string") throw new Error("summariser did not return a string");
      return summary;
    } finally {
      clearTimeout(timer);
    }
  }

  #finish(contextId: string, ctx: Context, batchSize: number, summary: string | undefined, error: unknown): void {
    ctx.inFlight = null;
    // Cleared or evicted meanwhile: the result belongs to nobody.
    if (this.#contexts.get(contextId) !== ctx) return;
    // By sequence number, so entries added meanwhile stay and none is removed twice.
    ctx.entries = ctx.entries.filter((e) => e.seq >= ctx.cutoff);
    if (summary !== undefined) {
      ctx.summary = summary;
      this.#counters.compressions++;
    } else {
      // The older messages go unsummarised (the previous summary stays); the newest are kept.
      this.#counters.compressionFailures++;
      this.#counters.dropped += batchSize;
      this.#lastFailure = { contextId, error: error instanceof Error ? error.message : String(error), at: Date.now() };
    }
    ctx.cutoff = 0;
    this.#maybeCompress(contextId, ctx);
  }
}
