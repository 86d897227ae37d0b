import type { InitContext } from "../src/actor/actor-context.ts";
import { defineActor } from "../src/actor/define-actor.ts";
import { ErrorCode, HermesError } from "../mesh/errors.ts";

/** The topic every tick is published on. */
export const TICK_TOPIC = "clock.tick";

interface TickerState {
  ticks: number;
  interval_ms: number;
  timer: ReturnType<typeof setInterval>;
}

/**
 * A clock: publishes `{ n, at }` (a counter from 1 and the ISO time) on `clock.tick` every
 * `TICK_MS` milliseconds (environment, default 1000), from start until the actor stops; a
 * restart starts again from n = 1. Ticks nobody subscribes to are simply dropped.
 * `{ op: "status" }` answers `{ ticks, interval_ms }`.
 *
 * @example
 * // mesh.yaml:  - actor: ticker
 * //               module: ./ticker.ts
 * //               env: { TICK_MS: "1000" }
 * await mesh.subscribe("clock.tick", (event) => console.log(event.payload.n, event.payload.at));
 */
export default defineActor<TickerState>({
  init(ctx) {
    const interval_ms = tickInterval(process.env.TICK_MS);
    const state: TickerState = { ticks: 0, interval_ms, timer: setInterval(() => tick(ctx, state), interval_ms) };
    return state;
  },
  onRequest(request, ctx) {
    if (request.payload.op === "status") return { ticks: ctx.state.ticks, interval_ms: ctx.state.interval_ms };
    const reason = `unknown op ${JSON.stringify(request.payload.op) ?? "(none)"}`;
    throw new HermesError(ErrorCode.INVALID_REQUEST, reason, { reason, expected: "{ op: \"status\" }" });
  },
  onStop({ state }) {
    clearInterval(state.timer);
  },
});

function tick(ctx: InitContext, state: TickerState): void {
  state.ticks++;
  try {
    ctx.publish(TICK_TOPIC, { n: state.ticks, at: new Date().toISOString() });
  } catch (error) {
    // A publish can fail only while the node shuts down; the next tick tries again.
    ctx.log.warn("tick not published", { n: state.ticks, error: String(error) });
  }
}

/** TICK_MS, checked: a typo must stop the actor at start, not make it tick every millisecond. */
function tickInterval(raw: string | undefined): number {
  if (raw === undefined || raw === "") return 1000;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 1 || ms > 86_400_000) {
    const reason = `TICK_MS is ${JSON.stringify(raw)}`;
    throw new HermesError(ErrorCode.INVALID_REQUEST, `${reason}: not a whole number of milliseconds from 1 to 86400000`, { reason, expected: "an integer from 1 to 86400000" });
  }
  return ms;
}
