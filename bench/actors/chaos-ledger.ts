import { defineActor } from "../../src/actor/define-actor.ts";

/**
 * Chaos-run actor (bench/chaos.ts), durable: counts how often each key arrived, by event or
 * request, in its store, committed with the message's dedupe record, so a count above 1 is a
 * message handled twice. `{ op: "counts" }` answers every key's count.
 */
export default defineActor({
  durable: true,
  onRequest(request, ctx) {
    if (request.payload.op === "counts") {
      return { counts: Object.fromEntries(ctx.store.keys("seen:").map((k) => [k.slice(5), ctx.store.get<number>(k)])) };
    }
    count(ctx.store, String(request.payload.key));
    return { key: request.payload.key };
  },
  onEvent(event, ctx) {
    count(ctx.store, String(event.payload.key));
  },
});

function count(store: { get<T>(key: string): T | undefined; set(key: string, value: unknown): void }, key: string): void {
  store.set(`seen:${key}`, (store.get<number>(`seen:${key}`) ?? 0) + 1);
}
