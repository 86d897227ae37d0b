import { describe, expect, test } from "bun:test";
import { ActorMetrics } from "../../src/observability/actor-metrics.ts";
import { formatMetrics } from "../../src/observability/prometheus.ts";
import type { RegistryEntry } from "../../mesh/registry.ts";

const entry = (address: string, extra: Partial<RegistryEntry> = {}): RegistryEntry => ({
  name: address.split("#")[0]!, instance: 0, address, id: `id-${address}`, socket: `/tmp/${address}.sock`, capabilities: [],
  subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 0, kind: "actor", ...extra,
});

describe("metrics", () => {
  test("ActorMetrics counts by type and code and fills cumulative latency buckets", () => {
    const m = new ActorMetrics();
    m.handled("request", 0.00005);
    m.handled("request", 0.003, 7);
    m.handled("event", 20);
    m.redelivered();
    const s = m.snapshot();
    expect(s.handled).toEqual({ request: 2, event: 1 });
    expect(s.errors).toEqual({ 7: 1 });
    expect(s.redeliveries).toBe(1);
    expect(s.latency_buckets[0]).toBe(1); // <= 0.1 ms
    expect(s.latency_buckets.at(-2)).toBe(2); // <= 10 s
    expect(s.latency_buckets.at(-1)).toBe(3); // +Inf
    expect(s.latency_count).toBe(3);
  });

  test("the exposition has every family, one series per instance, escaped labels, and no clients", () => {
    const m = new ActorMetrics();
    m.handled("request", 0.001, 9);
    const text = formatMetrics({
      entries: [entry("echo#0", { restarts: 2, queueDepth: 3 }), entry('we"ird'), entry("client-1", { kind: "client" })],
      stats: { "echo#0": { ...m.snapshot(), dead_letters: 4 } },
      gateway: { requests: { "/hermes/v1/invoke 200": 5 } },
    });
    expect(text).toContain('hermes_messages_handled_total{actor="echo",instance="echo#0",type="request"} 1');
    expect(text).toContain('hermes_errors_total{actor="echo",instance="echo#0",code="9",code_name="TTL_EXPIRED"} 1');
    expect(text).toContain('hermes_handling_seconds_bucket{actor="echo",instance="echo#0",le="+Inf"} 1');
    expect(text).toContain('hermes_restarts_total{actor="echo",instance="echo#0"} 2');
    expect(text).toContain('hermes_queue_depth{actor="echo",instance="echo#0"} 3');
    expect(text).toContain('hermes_dead_letters_total{actor="echo",instance="echo#0"} 4');
    expect(text).toContain('instance="we\\"ird"');
    expect(text).toContain('hermes_gateway_requests_total{route="/hermes/v1/invoke",status="200"} 5');
    expect(text).not.toContain("client-1");
    for (const l of text.trim().split("\n")) expect(l).toMatch(/^(# (HELP|TYPE) \w+ .+|\w+\{.*\} [\d.e+-]+)$/);
  });
});
