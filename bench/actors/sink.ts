import { defineActor } from "../../src/actor/define-actor.ts";

/**
 * Bench actor: counts the events it handled; `{ op: "count" }` answers the count, and any other
 * request is answered with an empty map (the pipelined-requests contender). Requests and events
 * share one mailbox in arrival order, so a count asked after a burst is answered after it.
 */
let count = 0;
export default defineActor({
  onRequest(request) {
    return request.payload.op === "count" ? { count } : {};
  },
  onEvent() {
    count++;
  },
});
