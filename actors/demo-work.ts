/**
 * What the demo workflow actors (image-gen, caption-gen, validator) share: not an actor itself.
 * Each keeps counts of the executions it started (per run, by context_id) and of those
 * cancelled, simulates work that honours cancel, and fails on request, so tests and the demo
 * can show parallel branches, retries, failure branches, resume and cancel deterministically.
 */
import type { ActorContext } from "../src/actor/actor-context.ts";
import type { Payload } from "../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../mesh/errors.ts";

/** Counts kept in memory: handler starts, not answers, so a re-run would show. */
export interface DemoState {
  started: number;
  cancelled: number;
  byContext: Map<string, number>;
}

/** The state every demo actor starts with. */
export function demoInit(): DemoState {
  return { started: 0, cancelled: 0, byContext: new Map() };
}

/** Counts this execution; returns which one it is for this run (1 for the first). */
export function beginExecution(ctx: ActorContext<DemoState>): number {
  const key = ctx.envelope.context_id ?? ctx.envelope.trace_id;
  const n = (ctx.state.byContext.get(key) ?? 0) + 1;
  ctx.state.byContext.set(key, n);
  ctx.state.started++;
  return n;
}

/** `{ op: "stats", context_id? }`: executions started (in all, or for one run) and cancelled. */
export function demoStats(ctx: ActorContext<DemoState>, p: Payload): Payload {
  return {
    address: ctx.address,
    started: ctx.state.started,
    cancelled: ctx.state.cancelled,
    ...(typeof p.context_id === "string" && { executions: ctx.state.byContext.get(p.context_id) ?? 0 }),
  };
}

/** Simulated work of `ms`; a cancel (or deadline) ends it early, counted and logged, with code 3. */
export function simulateWork(ctx: ActorContext<DemoState>, ms: number): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const abort = () => {
      clearTimeout(timer);
      ctx.state.cancelled++;
      ctx.record({ event: "cancelled", actor_note: "work stopped by cancel", context_id: ctx.envelope.context_id });
      reject(new HermesError(ErrorCode.TASK_TIMEOUT, "cancelled while working"));
    };
    const timer = setTimeout(() => {
      ctx.signal.removeEventListener("abort", abort);
      resolve();
    }, ms);
    if (ctx.signal.aborted) abort();
    else ctx.signal.addEventListener("abort", abort, { once: true });
  });
}

/** `fail_times: n` in the payload: the first n executions of a run fail with code 7. */
export function failIfAsked(p: Payload, execution: number, what: string): void {
  const times = Number(p.fail_times ?? 0);
  if (execution <= times) throw new HermesError(ErrorCode.INTERNAL, `${what} failed (simulated failure ${execution} of ${times})`, { execution });
}

/** A number from the payload, or the default. */
export function numberOr(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) ? value : fallback;
}

/**
 * The payload as a demo actor reads it, however a workflow node built it: a node with an
 * `input` mapping sends the fields themselves (`{ prompt }`); a node without one gets the
 * engine's default `{ input, results?, feedback? }` (src/workflow/run-scope.ts, nodePayload),
 * whose `input` (the run's input) then fills in the fields the top level lacks.
 *
 * @example
 * nodeFields({ input: { prompt: "a fox" }, results: { image: { image: "image://x.png" } } });
 * // { prompt: "a fox", input: { prompt: "a fox" }, results: { image: { image: "image://x.png" } } }
 */
export function nodeFields(p: Payload): Payload {
  const input = p.input;
  if (input === null || typeof input !== "object" || Array.isArray(input)) return p;
  return { ...(input as Payload), ...p };
}
