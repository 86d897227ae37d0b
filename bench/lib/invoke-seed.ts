/**
 * The request every gateway load sends: the protocol's own HTTP example (PROTOCOL.md section 7),
 * a meta/payload calculator request for "2+2", and the check of its answer.
 */

/** The seed request, as POSTed to `/hermes/v1/invoke`. */
export const SEED_REQUEST = {
  meta: { version: "1.2", msg_type: 1, sender_id: "a1b2c3", receiver_id: "d4e5f6", ttl: 300, trace_id: "t7u8v9" },
  payload: { task_id: "x1y2z3", tool: "calculator", expression: "2+2" },
} as const;

/** The seed request with its own trace id (so an answer can be matched to its request). */
export function seedWithTrace(traceId: string): typeof SEED_REQUEST {
  return { ...SEED_REQUEST, meta: { ...SEED_REQUEST.meta, trace_id: traceId } } as typeof SEED_REQUEST;
}

/**
 * Why `answer` is not the right answer to the seed sent with `traceId`, or undefined when it is:
 * msg_type 2, the same trace id, sender and receiver swapped, result 4, task_id passed through.
 *
 * @example
 * seedAnswerProblem({ meta: { msg_type: 2, trace_id: "t1", sender_id: "d4e5f6", receiver_id: "a1b2c3" }, payload: { result: 4, task_id: "x1y2z3" } }, "t1"); // undefined
 */
export function seedAnswerProblem(answer: any, traceId: string): string | undefined {
  const meta = answer?.meta;
  const payload = answer?.payload;
  if (meta?.msg_type !== 2) return `msg_type ${meta?.msg_type}, not 2`;
  if (meta.trace_id !== traceId) return `trace_id ${meta.trace_id}, not ${traceId} (a crossed answer)`;
  if (meta.sender_id !== SEED_REQUEST.meta.receiver_id || meta.receiver_id !== SEED_REQUEST.meta.sender_id) return "sender and receiver not swapped";
  if (payload?.result !== 4) return `result ${JSON.stringify(payload?.result ?? payload)}, not 4`;
  if (payload.task_id !== SEED_REQUEST.payload.task_id) return `task_id ${payload.task_id}`;
  return undefined;
}

/**
 * A bare `Bun.serve` on loopback answering `POST /hermes/v1/invoke` as the gateway answers the
 * seed (sender and receiver swapped, msg_type 2), its result from `evaluate`: the gateway
 * scenario's baselines (fixtures/bare-http-fixture.ts, fixtures/bare-forwarder-fixture.ts).
 *
 * @example
 * const server = serveBareInvoke((expression) => evaluateExpression(expression));
 */
export function serveBareInvoke(evaluate: (expression: string) => unknown): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 120,
    async fetch(request) {
      if (request.method !== "POST" || new URL(request.url).pathname !== "/hermes/v1/invoke") return new Response("not found", { status: 404 });
      const { meta, payload } = (await request.json()) as { meta: Record<string, unknown>; payload: { task_id?: string; expression: string } };
      const result = evaluate(payload.expression);
      return Response.json({
        meta: { ...meta, msg_type: 2, sender_id: meta.receiver_id, receiver_id: meta.sender_id },
        // Awaited only when it is a promise: the one-process baseline keeps its single turn.
        payload: { task_id: payload.task_id, result: result instanceof Promise ? await result : result, expression: payload.expression },
      });
    },
  });
}
