import { defineActor } from "../../src/actor/define-actor.ts";

/**
 * Chaos-run actor (bench/chaos.ts), durable: a request `{ n }` sends the event
 * `{ key: "relay-<n>" }` to the ledger (in its outbox, committed with the answer), asks a
 * worker of the `chaos.work` pool for `{ n }` (actor to actor, at least once), and answers what
 * the worker said with the worker's pid. Killed between the two, the call commits nothing and
 * runs again when its request is redelivered: the ledger still counts relay-<n> once.
 */
export default defineActor({
  durable: true,
  async onRequest(request, ctx) {
    const n = Number(request.payload.n);
    await ctx.send("ledger", { key: `relay-${n}` });
    const worked = await ctx.request({ capability: "chaos.work" }, { n }, { timeoutMs: 60_000 });
    return { n, worked: worked.n, worker: worked.pid };
  },
});
