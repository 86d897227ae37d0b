import { defineActor } from "../src/actor/define-actor.ts";
import { beginExecution, demoInit, demoStats, failIfAsked, numberOr, simulateWork, type DemoState } from "./demo-work.ts";

/**
 * A stand-in content checker for the demo workflow: the image must be an image reference and
 * the caption at most `max_caption_chars` characters (default 80). It says which inputs failed,
 * so the workflow can send only those back (the caption writer's first draft is always too
 * long: the demo's validator rejects once). Options: `delay_ms` (default 50), `fail_times`.
 *
 * Payload: `{ image, caption, max_caption_chars? }`. Answer: `{ valid, failed, reasons, execution }`.
 */
export default defineActor<DemoState>({
  capabilities: ["content_validation"],
  concurrency: 64,
  durable: true,
  init: demoInit,
  async onRequest(request, ctx) {
    const p = request.payload;
    if (p.op === "stats") return demoStats(ctx, p);
    const execution = beginExecution(ctx);
    const started_at = Date.now();
    failIfAsked(p, execution, "validation");
    await simulateWork(ctx, numberOr(p.delay_ms, 50));
    const reasons: Record<string, string> = {};
    if (typeof p.image !== "string" || !p.image.startsWith("image://")) reasons.image = "no image reference";
    const max = numberOr(p.max_caption_chars, 80);
    if (typeof p.caption !== "string" || p.caption.trim() === "") reasons.caption = "no caption";
    else if (p.caption.length > max) reasons.caption = `caption too long: ${p.caption.length} > ${max} characters; make it shorter`;
    const failed = Object.keys(reasons);
    return { valid: failed.length === 0, failed, reasons, ...(p.image === "image://placeholder.png" && { note: "placeholder image" }), started_at, ended_at: Date.now(), execution };
  },
});
