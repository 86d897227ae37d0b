import { defineActor } from "../src/actor/define-actor.ts";
import { ErrorCode, HermesError } from "../mesh/errors.ts";

/** Review rounds before the pipeline gives up on getting the code approved. */
const MAX_ROUNDS = Number(process.env.PIPELINE_MAX_ROUNDS ?? 3);

/**
 * The planner → coder → reviewer pipeline of the seed design, as an orchestrating actor: the
 * planner splits the request into steps, the coder writes and self-checks code with its tools,
 * the reviewer approves (an answer starting with "APPROVED") or sends it back with what to
 * change, at most MAX_ROUNDS times. Each stage is a request to an agent actor, routed by
 * capability; the original request travels with every hop as the first entry of the context
 * chain, so nothing downstream loses it. Progress reports each stage.
 *
 * Payload: `{ request: string }`. Answer: `{ result, plan, rounds, approved, review }`, preceded
 * by `notice` and `model: "scripted"` when an agent's answer carried a notice (the scripted
 * provider: the answer is the script's, not about the request; the notice says how to use a
 * real model).
 */
export default defineActor({
  capabilities: ["pipeline"],
  concurrency: 64,
  async onRequest(request, ctx) {
    const text = request.payload.request;
    if (typeof text !== "string" || !text.trim()) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, "the pipeline needs a `request` text", { reason: "missing request", expected: { request: "string" } });
    }
    const chain = [{ actor: "user", at: Date.now(), summary: text }];
    const context_id = request.context_id ?? request.message_id;
    // An agent's notice (the scripted provider's: not about the request) reaches the final answer.
    let notice: string | undefined;
    const ask = async (capability: string, task: string) => {
      const answer = await ctx.request({ capability }, { task, context_chain: chain }, { context_id });
      if (typeof answer.notice === "string") notice ??= answer.notice;
      chain.push({ actor: capability, at: Date.now(), summary: String(answer.answer).slice(0, 2000) });
      return String(answer.answer);
    };
    const finish = (outcome: { result: string; plan: string; rounds: number; approved: boolean; review: string }) =>
      notice === undefined ? outcome : { notice, model: "scripted", ...outcome };

    ctx.progress({ stage: "plan" });
    const plan = await ask("plan", text);
    let feedback = "";
    let code = "";
    let review = "";
    for (let round = 1; round <= MAX_ROUNDS; round++) {
      ctx.progress({ stage: "code", round });
      code = await ask("code", feedback ? `Plan:\n${plan}\n\nReviewer feedback to address:\n${feedback}` : `Plan:\n${plan}`);
      ctx.progress({ stage: "review", round });
      review = await ask("review", `Request:\n${text}\n\nCode:\n${code}`);
      if (/^\s*APPROVED\b/i.test(review)) return finish({ result: code, plan, rounds: round, approved: true, review });
      feedback = review;
    }
    return finish({ result: code, plan, rounds: MAX_ROUNDS, approved: false, review });
  },
});
