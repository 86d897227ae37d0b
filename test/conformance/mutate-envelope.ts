import type { SeededRandom } from "./seeded-random.ts";

/** Values of the wrong type, or of the right type at the edge of what the protocol allows. */
export function oddValues(): unknown[] {
  return [
    undefined, null, true, false, 0, -0, 1, -1, 5, 9, 10, -7, 1.5, -0.25, NaN, Infinity, -Infinity,
    2 ** 31, 2 ** 32, 2 ** 53 - 1, 2 ** 53, 2 ** 64, 1e300, -(2 ** 53), 12345678901234567890n, 1n,
    "", "x", "request", "response", "event", "error", "progress", "cancel", "hello", "REQUEST",
    "01ARZ3NDEKTSV4RRFFQ69G5FAV", "01arz3ndektsv4rrffq69g5fav", "01ARZ3NDEKTSV4RRFFQ69G5FAU", "01ARZ3NDEKTSV4RRFFQ69G5FA",
    [], [1, 2], ["x"], {}, { a: 1 }, { a: "b" }, Object.create(null), new Uint8Array([1, 2]), new Date(0), new Map([["a", 1]]),
    "你好", "😀",
  ];
}

const FIELDS = [
  "message_id", "message_type", "trace_id", "source_agent", "target_agent", "topic", "capability", "reply_to",
  "correlation_id", "context_id", "priority", "timestamp", "ttl", "attempt", "seq", "headers", "payload",
];

/**
 * A copy of `base` with 1 to 3 random edits: a field deleted, replaced by an odd value, or a
 * value put inside `headers` / `payload`. Many results stay valid, which is the point: the
 * guard and the schema must agree on both sides of every edge.
 */
export function mutateEnvelope(base: Record<string, unknown>, random: SeededRandom): Record<string, unknown> {
  const env: Record<string, unknown> = structuredClone(base);
  const odd = oddValues();
  const edits = 1 + random.int(3);
  for (let i = 0; i < edits; i++) {
    const field = random.pick(FIELDS);
    const action = random.int(4);
    if (action === 0) delete env[field];
    else if (action === 1 || action === 2) env[field] = random.pick(odd);
    else {
      // Reach one level down: headers values must be strings, payload values anything.
      const inner = random.pick(["headers", "payload"]);
      const map = typeof env[inner] === "object" && env[inner] !== null ? { ...(env[inner] as object) } : {};
      (map as Record<string, unknown>)[random.pick(["traceparent", "k", "", "__proto__x"])] = random.pick(odd);
      env[inner] = map;
    }
  }
  return env;
}
