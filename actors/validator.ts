import { defineActor } from "../src/actor/define-actor.ts";
import type { Payload } from "../mesh/envelope.ts";
import { beginExecution, demoInit, demoStats, failIfAsked, nodeFields, numberOr, simulateWork, type DemoState } from "./demo-work.ts";

/**
 * A stand-in content checker for the demo workflow: the image must be an image reference and
 * the caption at most `max_caption_chars` characters (default 200). It says which inputs failed,
 * so the workflow can send only those back (actors/workflows/image-caption.yaml allows 80, which
 * the caption writer's wordy first draft exceeds: that validator rejects once). Options:
 * `delay_ms` (default 50), `fail_times`.
 *
 * Payload: `{ image, caption, max_caption_chars? }`. A node without an `input` mapping (as in
 * actors/workflows/image_with_caption.yaml) gets the engine's default
 * `{ input, results: { <upstream node id>: result } }` instead: then `image` and `caption` are
 * taken from the first upstream result that has them, and `max_caption_chars` from the run's
 * input. Answer: `{ valid, failed, reasons, execution }`.
 */
export default defineActor<DemoState>({
  capabilities: ["content_validation"],
  concurrency: 64,
  durable: true,
  init: demoInit,
  async onRequest(request, ctx) {
    if (request.payload.op === "stats") return demoStats(ctx, request.payload);
    const p = nodeFields(request.payload);
    const execution = beginExecution(ctx);
    const started_at = Date.now();
    failIfAsked(p, execution, "validation");
    await simulateWork(ctx, numberOr(p.delay_ms, 50));
    const image = fieldOrUpstream(p, "image");
    const caption = fieldOrUpstream(p, "caption");
    const reasons: Record<string, string> = {};
    if (typeof image !== "string" || !image.startsWith("image://")) reasons.image = "no image reference";
    const max = numberOr(p.max_caption_chars, 200);
    if (typeof caption !== "string" || caption.trim() === "") reasons.caption = "no caption";
    else if (caption.length > max) reasons.caption = `caption too long: ${caption.length} > ${max} characters; make it shorter`;
    const failed = Object.keys(reasons);
    return { valid: failed.length === 0, failed, reasons, ...(image === "image://placeholder.png" && { note: "placeholder image" }), started_at, ended_at: Date.now(), execution };
  },
});

/** `name` from the payload itself, else from the first upstream result (`results.<node id>`) that has it. */
function fieldOrUpstream(p: Payload, name: string): unknown {
  if (p[name] !== undefined) return p[name];
  const results = p.results;
  if (results === null || typeof results !== "object") return undefined;
  for (const result of Object.values(results)) {
    if (result !== null && typeof result === "object" && (result as Payload)[name] !== undefined) return (result as Payload)[name];
  }
  return undefined;
}
