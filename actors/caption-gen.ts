import { defineActor } from "../src/actor/define-actor.ts";
import { ErrorCode, HermesError } from "../mesh/errors.ts";
import { beginExecution, demoInit, demoStats, failIfAsked, nodeFields, numberOr, simulateWork, type DemoState } from "./demo-work.ts";

/**
 * A stand-in caption writer for the demo workflow (offline and deterministic). Its first draft
 * is wordy; given `feedback` (the validator's, when the work is sent back) it writes the short
 * caption instead. Options: `delay_ms` (default 150), `fail_times`. It answers to
 * `text_generation` too: the seed design's workflow (actors/workflows/image_with_caption.yaml)
 * asks for its caption by that capability.
 *
 * Payload: `{ prompt, feedback? }`, or a workflow's default `{ input: { prompt }, feedback? }`
 * (see nodeFields). Answer: `{ caption, revised, started_at, ended_at, execution }`.
 */
export default defineActor<DemoState>({
  capabilities: ["caption_generation", "text_generation"],
  concurrency: 64,
  durable: true,
  init: demoInit,
  async onRequest(request, ctx) {
    if (request.payload.op === "stats") return demoStats(ctx, request.payload);
    const p = nodeFields(request.payload);
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
