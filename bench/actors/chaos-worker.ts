import { defineActor } from "../../src/actor/define-actor.ts";

/** Chaos-run actor (bench/chaos.ts), a pool instance, not durable: answers `{ n, pid }`. */
export default defineActor({
  capabilities: ["chaos.work"],
  onRequest(request) {
    return { n: request.payload.n, pid: process.pid };
  },
});
