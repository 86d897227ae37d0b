import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { upgradeWebSocket } from "hono/bun";
import type { MeshNode } from "../../mesh/mesh-node.ts";
import type { Registry } from "../../mesh/registry.ts";
import type { EventLog } from "../observability/event-log.ts";
import { readTrace, renderTrace } from "../observability/trace-tree.ts";
import { formatMetrics, PROMETHEUS_CONTENT_TYPE, type MetricsSource } from "../observability/prometheus.ts";
import { ErrorCode } from "../protocol/error-codes.ts";
import { HermesError } from "../protocol/hermes-error.ts";
import { dashboardPage } from "./dashboard-page.ts";
import { InvokeHandler, type InvokeResult } from "./invoke-handler.ts";
import { RecentTraces } from "./recent-traces.ts";

/** What the gateway needs from the mesh. */
export interface GatewayDeps {
  /** The gateway's own mesh node (its address receives the answers). */
  node: MeshNode;
  registry: Registry;
  meshName: string;
  /** Every actor's counters, from the supervisor. */
  stats: () => Promise<MetricsSource["stats"]>;
  /** Required as `Authorization: Bearer <token>` (or `?token=` for the dashboard and WebSocket) when set. */
  token?: string;
  /** Largest request body, bytes. Default 1 MiB. */
  bodyLimit?: number;
  events?: EventLog;
  /** The mesh directory, whose event logs the trace view reads. */
  dir?: string;
}

const ACCEPTED_TYPES = ["application/hermes+json", "application/json"];

/**
 * The gateway's HTTP application (hono): `POST /hermes/v1/invoke` (PROTOCOL.md section 7),
 * the `/hermes/v1/stream` WebSocket, `/health`, `/actors`, `/metrics`, and the dashboard.
 * Every refusal is a coded Hermes error; nothing a client sends can take it down.
 */
export function createGatewayApp(deps: GatewayDeps): Hono {
  const app = new Hono();
  const recent = new RecentTraces();
  const invoke = new InvokeHandler(deps.node, deps.registry, recent, deps.events);
  const counts: Record<string, number> = {};
  const limit = deps.bodyLimit ?? 1024 * 1024;

  app.use("*", async (c, next) => {
    await next();
    const key = `${c.req.routePath} ${c.res.status}`;
    counts[key] = (counts[key] ?? 0) + 1;
  });

  // Authentication: everything but /health and the dashboard page itself (its API calls carry the token).
  app.use("*", async (c, next) => {
    if (!deps.token || c.req.path === "/health" || c.req.path === "/") return next();
    const header = c.req.header("authorization");
    const given = header?.startsWith("Bearer ") ? header.slice(7) : c.req.query("token");
    if (given !== deps.token) {
      const error = new HermesError(ErrorCode.AUTH_FAILED, given === undefined ? "a bearer token is required" : "wrong token", { auth_method: "bearer" });
      return c.json(error.toPayload(), 401, { "www-authenticate": 'Bearer realm="hermes-mesh"' });
    }
    return next();
  });

  app.post(
    "/hermes/v1/invoke",
    bodyLimit({
      maxSize: limit,
      onError: (c) =>
        c.json(new HermesError(ErrorCode.RESOURCE_EXHAUSTED, `request body over ${limit} bytes`, { resource: "body_bytes", limit }).toPayload(), 413),
    }),
    async (c) => {
      const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      if (!ACCEPTED_TYPES.includes(type)) {
        return c.json(new HermesError(ErrorCode.INVALID_REQUEST, `unsupported content type '${type || "(none)"}'`, { reason: "content type", expected: ACCEPTED_TYPES }).toPayload(), 415);
      }
      let body: unknown;
      try {
        body = JSON.parse(await c.req.text());
      } catch (error) {
        return c.json(new HermesError(ErrorCode.INVALID_REQUEST, `the body is not JSON: ${(error as Error).message}`, { reason: "bad JSON", expected: "a JSON object" }).toPayload(), 400);
      }
      return reply(c, await invoke.handle(body, c.req.header("traceparent"), c.req.raw.signal));
    },
  );

  app.get(
    "/hermes/v1/stream",
    upgradeWebSocket(() => ({
      onMessage(event, ws) {
        let body: unknown;
        try {
          body = JSON.parse(String(event.data));
        } catch {
          ws.send(JSON.stringify(new HermesError(ErrorCode.INVALID_REQUEST, "a frame is not JSON", { reason: "bad JSON", expected: "a JSON envelope or meta/payload object" }).toPayload()));
          return;
        }
        void invoke
          .handle(body, undefined, undefined, (progress) => {
            try {
              ws.send(JSON.stringify(progress));
            } catch {
              // The socket closed; the request still completes.
            }
          })
          .then((result) => {
            try {
              ws.send(JSON.stringify(result.body));
            } catch {
              // Closed meanwhile.
            }
          });
      },
    })),
  );

  app.get("/health", (c) => {
    const entries = deps.registry.snapshot().filter((e) => e.kind !== "client");
    const healthy = entries.filter((e) => e.health === "healthy").length;
    return c.json({ status: "ok", mesh: deps.meshName, actors: entries.length, healthy });
  });

  app.get("/actors", (c) => c.json(deps.registry.snapshot()));

  app.get("/metrics", async (c) => {
    const text = formatMetrics({ entries: deps.registry.snapshot(), stats: await deps.stats(), gateway: { requests: counts } });
    return c.body(text, 200, { "content-type": PROMETHEUS_CONTENT_TYPE });
  });

  app.get("/api/overview", async (c) => {
    return c.json({ mesh: deps.meshName, at: Date.now(), entries: deps.registry.snapshot(), stats: await deps.stats(), traces: recent.list() });
  });

  // One flow across actors, rebuilt from the mesh's event logs (the dashboard's trace view).
  app.get("/api/trace/:id", (c) => {
    const id = c.req.param("id");
    const roots = deps.dir ? readTrace(deps.dir, id) : [];
    return c.json({ trace_id: id, spans: roots, text: renderTrace(id, roots) });
  });

  app.get("/", (c) => c.html(dashboardPage(deps.meshName)));

  app.notFound((c) => c.json(new HermesError(ErrorCode.UNROUTABLE, `no route ${c.req.method} ${c.req.path}`, { target: c.req.path, known: ["/hermes/v1/invoke", "/hermes/v1/stream", "/health", "/actors", "/metrics", "/"] }).toPayload(), 404));
  app.onError((error, c) => c.json(HermesError.from(error).toPayload(), 500));
  return app;
}

function reply(c: Context, result: InvokeResult): Response {
  return c.json(result.body, result.status as 200, result.headers);
}
