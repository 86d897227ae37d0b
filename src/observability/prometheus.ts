import type { RegistryEntry } from "../../mesh/registry.ts";
import { errorName } from "../../mesh/errors.ts";
import { LATENCY_BUCKETS, type ActorStats } from "./actor-metrics.ts";

/** What /metrics is made from: the registry and each actor's latest counters. */
export interface MetricsSource {
  entries: RegistryEntry[];
  stats: Record<string, Partial<ActorStats> & { dead_letters?: number }>;
  /** The gateway's own counters: HTTP requests by route and status. */
  gateway?: { requests: Record<string, number> };
}

/**
 * The Prometheus text exposition format (version 0.0.4) of the mesh: messages handled, errors
 * by code, handling latency histograms, restarts, queue depth, in-flight handlers,
 * redeliveries and dead letters, one series per actor instance.
 *
 * @example
 * new Response(formatMetrics(source), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
 */
export function formatMetrics(source: MetricsSource): string {
  const out: string[] = [];
  const family = (name: string, type: string, help: string) => out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  const actors = source.entries.filter((e) => e.kind !== "client");

  family("hermes_messages_handled_total", "counter", "Messages handled by an actor instance, by envelope type.");
  for (const e of actors) for (const [type, n] of Object.entries(source.stats[e.address]?.handled ?? {})) out.push(`hermes_messages_handled_total{${labels(e, { type })}} ${n}`);

  family("hermes_errors_total", "counter", "Answers with an error, by Hermes error code.");
  for (const e of actors) {
    for (const [code, n] of Object.entries(source.stats[e.address]?.errors ?? {})) {
      out.push(`hermes_errors_total{${labels(e, { code, code_name: errorName(Number(code)) })}} ${n}`);
    }
  }

  family("hermes_handling_seconds", "histogram", "Time from taking a message out of the mailbox to its answer.");
  for (const e of actors) {
    const s = source.stats[e.address];
    if (!s?.latency_buckets) continue;
    LATENCY_BUCKETS.forEach((le, i) => out.push(`hermes_handling_seconds_bucket{${labels(e, { le: String(le) })}} ${s.latency_buckets![i] ?? 0}`));
    out.push(`hermes_handling_seconds_bucket{${labels(e, { le: "+Inf" })}} ${s.latency_count ?? 0}`);
    out.push(`hermes_handling_seconds_sum{${labels(e)}} ${s.latency_sum_seconds ?? 0}`);
    out.push(`hermes_handling_seconds_count{${labels(e)}} ${s.latency_count ?? 0}`);
  }

  const gauge = (name: string, type: string, help: string, value: (e: RegistryEntry) => number | undefined) => {
    family(name, type, help);
    for (const e of actors) {
      const v = value(e);
      if (v !== undefined) out.push(`${name}{${labels(e)}} ${v}`);
    }
  };
  gauge("hermes_restarts_total", "counter", "Restarts of an actor instance by its supervisor.", (e) => e.restarts);
  gauge("hermes_queue_depth", "gauge", "Messages waiting in an actor's mailbox.", (e) => e.queueDepth);
  gauge("hermes_in_flight", "gauge", "Handlers running in an actor.", (e) => e.inFlight);
  gauge("hermes_up", "gauge", "1 when the instance is healthy.", (e) => (e.health === "healthy" ? 1 : 0));
  gauge("hermes_redeliveries_total", "counter", "Deliveries an actor received that were redeliveries (attempt > 1).", (e) => source.stats[e.address]?.redeliveries);
  gauge("hermes_dead_letters_total", "counter", "Envelopes an actor gave up on after max attempts.", (e) => source.stats[e.address]?.dead_letters);

  if (source.gateway) {
    family("hermes_gateway_requests_total", "counter", "HTTP requests the gateway answered, by route and status.");
    for (const [key, n] of Object.entries(source.gateway.requests)) {
      const [route, status] = key.split(" ");
      out.push(`hermes_gateway_requests_total{route="${escape(route!)}",status="${status}"} ${n}`);
    }
  }
  return `${out.join("\n")}\n`;
}

/** Content type of the text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

function labels(e: RegistryEntry, extra: Record<string, string> = {}): string {
  return Object.entries({ actor: e.name, instance: e.address, ...extra })
    .map(([k, v]) => `${k}="${escape(v)}"`)
    .join(",");
}

function escape(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
