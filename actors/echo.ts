import { defineActor } from "../src/actor/define-actor.ts";

/**
 * Answers every request with the payload it got. With `{ progress: n }` it sends n progress
 * messages first; with `{ sleep_ms: n }` it waits that long (honouring cancel). Events are
 * counted, and `{ op: "count" }` tells how many this instance has seen.
 */
export default defineActor({
  capabilities: ["echo"],
  capabilityInfo: {
    echo: {
      description: "Answers with the payload it got; { progress: n } sends n progress messages first, { sleep_ms: n } waits that long.",
      inputSchema: { type: "object", properties: { progress: { type: "integer", minimum: 0 }, sleep_ms: { type: "integer", minimum: 0 } } },
    },
  },
  init: () => ({ events: 0 }),
  // Synchronous unless asked to wait: a handler that returns a promise costs a deadline timer.
  onRequest(request, ctx) {
    const payload = request.payload;
    if (payload.op === "count") return { events: ctx.state.events, address: ctx.address };
    const steps = Number(payload.progress ?? 0);
    for (let step = 1; step <= steps; step++) ctx.progress({ step });
    if (typeof payload.sleep_ms !== "number") return payload;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(payload), payload.sleep_ms as number);
      ctx.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve(payload);
      });
    });
  },
  onEvent(_event, ctx) {
    ctx.state.events++;
  },
});
