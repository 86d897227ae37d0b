import type { Envelope } from "../../mesh/envelope.ts";

/** A fixed, valid request envelope for unit tests; `overrides` replace or add fields. */
export function sampleRequest(overrides: Partial<Envelope> & Record<string, unknown> = {}): Envelope {
  return {
    message_id: "01JGFJJZ000000000000000001",
    message_type: "request",
    trace_id: "trace-1",
    source_agent: "cli",
    target_agent: "echo",
    reply_to: "cli",
    timestamp: 1_735_689_600_000,
    ttl: 60_000,
    seq: 1,
    payload: { text: "hi" },
    ...overrides,
  } as Envelope;
}
