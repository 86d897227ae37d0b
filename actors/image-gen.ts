import { createHash } from "node:crypto";
import { defineActor } from "../src/actor/define-actor.ts";
import { ErrorCode, HermesError } from "../mesh/errors.ts";
import { beginExecution, demoInit, demoStats, failIfAsked, nodeFields, numberOr, simulateWork, type DemoState } from "./demo-work.ts";

/**
 * A stand-in image generator for the demo workflow (offline and deterministic): the same prompt
 * and style always give the same image reference. `{ placeholder: true }` answers the
 * placeholder a failure branch uses. Options: `delay_ms` (simulated work, default 150),
 * `fail_times` (the first n executions of a run fail). The answer tells when the work started
 * and ended and which execution of the run it was.
 *
 * Payload: `{ prompt, style? }`, or a workflow's default `{ input: { prompt, style? } }` (see
 * nodeFields). Answer: `{ image, width, height, prompt, started_at, ended_at, execution }`.
 */
export default defineActor<DemoState>({
  capabilities: ["image_generation"],
  concurrency: 64,
  durable: true,
  init: demoInit,
  async onRequest(request, ctx) {
    if (request.payload.op === "stats") return demoStats(ctx, request.payload);
    const p = nodeFields(request.payload);
    const execution = beginExecution(ctx);
    const started_at = Date.now();
    if (p.placeholder === true) {
      return { image: "image://placeholder.png", placeholder: true, reason: String(p.reason ?? ""), started_at, ended_at: Date.now(), execution };
    }
    if (typeof p.prompt !== "string" || !p.prompt.trim()) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, "an image needs a prompt", { reason: "missing prompt", expected: { prompt: "text" } });
    }
    failIfAsked(p, execution, "image generation");
    ctx.progress({ step: "rendering", prompt: p.prompt });
    await simulateWork(ctx, numberOr(p.delay_ms, 150));
    const style = typeof p.style === "string" ? p.style : "photo";
    const digest = createHash("sha256").update(`${p.prompt}\n${style}`).digest("hex").slice(0, 10);
    const slug = p.prompt.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 40);
    return { image: `image://${slug}-${digest}.png`, width: 1024, height: 768, style, prompt: p.prompt, started_at, ended_at: Date.now(), execution };
  },
});
