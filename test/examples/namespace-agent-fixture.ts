import { hostname } from "node:os";
import { defineActor } from "../../src/actor/define-actor.ts";

/**
 * The "agent container" of test/examples/namespaces.test.ts, run by `hermes-mesh actor` in
 * namespaces of its own: answers with what it sees of itself (its pid, which is its pid inside
 * its PID namespace, its uid, groups and hostname) next to the request's `i`. With
 * `{ call: "<actor>" }` it first asks that actor (the agent dialing a core member's socket) and
 * adds the answer as `answer`.
 */
export default defineActor({
  capabilities: ["ns.who"],
  async onRequest(request, ctx) {
    const call = request.payload.call;
    const answer = typeof call === "string" ? (await ctx.request(call, { from: ctx.address })) : undefined;
    return {
      i: request.payload.i ?? null,
      pid: process.pid,
      uid: process.getuid?.() ?? -1,
      groups: process.getgroups?.() ?? [],
      hostname: hostname(),
      ...(answer !== undefined && { answer }),
    };
  },
});
