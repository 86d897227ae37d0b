/**
 * Bench-only actor, a topic subscriber of the fan-out scenario (the mesh file says which
 * topics). Events from the publisher come in two modes:
 * - `{ mode: "latency", trial }`: answered at once by an event `{ trial, at, from }` back to
 *   the publisher, `at` the arrival time on the machine-wide clock (bench/lib/mono-clock.ts);
 * - `{ mode: "burst", burst, last }`: counted; the last one of a burst is answered by
 *   `{ burst, count, at, from }`, count being the events of that burst this subscriber got.
 */
import { defineActor } from "../../src/actor/define-actor.ts";
import { monoNow } from "../lib/mono-clock.ts";

let count = 0;

export default defineActor({
  onEvent(event, ctx) {
    const p = event.payload;
    if (p.mode === "latency") {
      ctx.send(event.source_agent, { trial: p.trial, at: monoNow(), from: ctx.address });
      return;
    }
    count++;
    if (p.last) {
      ctx.send(event.source_agent, { burst: p.burst, count, at: monoNow(), from: ctx.address });
      count = 0;
    }
  },
});
