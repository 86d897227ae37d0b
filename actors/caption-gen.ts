import { defineActor } from "../src/actor/define-actor.ts";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";
import { beginExecution, demoInit, demoStats, failIfAsked, numberOr, simulateWork, type DemoState } from "./demo-work.ts";

/**
 * A stand-in caption writer for the demo workflow (offline and deterministic). Its first draft
 * is wordy; given `feedback` (the validator's, when the work is sent back) it writes the short
 * caption instead. Options: `delay_ms` (default 150), `fail_times`.
 *
 * Payload: `{ prompt, feedback? }`. Answer: `{ caption, revised, started_at, ended_at, execution }`.
 */
export default defineActor<DemoState>({
  capabilities: ["caption_generation"],
  concurrency: 64,
  durable: true,
  init: demoInit,
  async onRequest(request, ctx) {
    const p = request.payload;
    if (p.op === "stats") return demoStats(ctx, p);
    const execution = beginExecution(ctx);
    const started_at = Date.now();
    if (typeof p.prompt !== "string" || !p.prompt.trim()) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, "a caption needs a prompt", { reason: "missing prompt", expected: { prompt: "text" } });
    }
    failIfAsked(p, execution, "caption generation");
    ctx.progress({ step: p.feedback ? "revising" : "drafting" });
    await simulateWork(ctx, numberOr(p.delay_ms, 150));
    const subject = p.prompt.trim().replace(/[.!]+$/, "");
    const revised = p.feedback !== undefined;
    const caption = revised
      ? `${subject[0]!.toUpperCase()}${subject.slice(1)}.`
      : `A breathtaking, ultra-detailed rendering of ${subject}, bathed in soft golden light, rich in texture and quiet atmosphere.`;
    return { caption, revised, ...(revised && { feedback: p.feedback }), started_at, ended_at: Date.now(), execution };
  },
});
