import { join } from "node:path";
import { Hono } from "hono";
import type { MeshNode } from "../../mesh/mesh-node.ts";
import type { Registry } from "../../mesh/registry.ts";
import type { EventLog } from "../observability/event-log.ts";
import { findTrace, renderTrace } from "../observability/trace-tree.ts";
import { formatMetrics, PROMETHEUS_CONTENT_TYPE, type MetricsSource } from "../observability/prometheus.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { AGENT_CARD_PATH } from "./a2a-card.ts";
import { A2A_PATH, mountA2A } from "./a2a-endpoint.ts";
import { AccessPolicy, accessRequestOf } from "./access-policy.ts";
import { dashboardPage } from "./dashboard-page.ts";
import { HistorySampler } from "./history-sampler.ts";
import { InvokeHandler } from "./invoke-handler.ts";
import { INVOKE_PATH, InvokeRoute, isInvokeRequest } from "./invoke-route.ts";
import { MCP_PATH, mountMcp } from "./mcp-route.ts";
import { RecentTraces } from "./recent-traces.ts";

/** What the gateway needs from the mesh. */
export interface GatewayDeps {
  /** The gateway's own mesh node (its address receives the answers). */
  node: MeshNode;
  registry: Registry;
  meshName: string;
  /** Every actor's counters, from the supervisor. */
  stats: () => Promise<MetricsSource["stats"]>;
  /** Required as `Authorization: Bearer <token>` (or `?token=` on the WebSocket) when set. */
  token?: string;
  /** The address the TCP listener is bound to: served as a Host value besides the loopback names. */
  host?: string;
  /** More Host values to serve (mesh file `gateway.allowed_hosts`). */
  allowedHosts?: readonly string[];
  /** More browser origins to serve (mesh file `gateway.allowed_origins`). */
  allowedOrigins?: readonly string[];
  /** Largest request body, bytes. Default 1 MiB. */
  bodyLimit?: number;
  events?: EventLog;
  /** The mesh directory, whose event logs the trace view reads. */
  dir?: string;
  /**
   * The dashboard's rolling history, sampled on its own timer (the gateway process starts one).
   * Without it the app keeps one that samples when `/api/history` is asked, so its charts only
   * cover the time a page was open.
   */
  history?: HistorySampler;
}

/**
 * What the listener passes as the second argument of `app.fetch`: the Bun server (for
 * WebSocket upgrades; none on Deno, which upgrades the request itself) and which listener it
 * is; requests over the Unix socket skip the Host check.
 */
export interface GatewayBindings {
  server: unknown;
  listener: "tcp" | "unix";
}

/** The gateway's app, and close() for when the gateway stops (it closes the A2A task store). */
export type GatewayApp = Hono<{ Bindings: GatewayBindings }> & { close(): Promise<void> };

// Bun upgrades through its server (and the `websocket` handlers given to Bun.serve), Deno the
// request itself. Loaded by runtime: hono/bun reads Bun's globals as it loads, so Deno cannot import it.
const { upgradeWebSocket } = (typeof Bun === "undefined" ? await import("hono/deno") : await import("hono/bun")) as typeof import("hono/bun");

/** Trace lookups read at once; more wait their turn (inside their own deadline). */
const TRACE_LOOKUPS_AT_ONCE = 2;
/** The longest a trace lookup reads before it answers with what it found (`truncated: true`). */
const TRACE_TIMEOUT_MS = 5000;

/**
 * The gateway's HTTP application (hono): `POST /hermes/v1/invoke` (docs/protocol.md §7),
 * the `/hermes/v1/stream` WebSocket, `/health`, `/actors`, `/metrics`, the dashboard
 * (`/`, with `/api/overview`, `/api/history` and `/api/trace/:id`), MCP at `/mcp`, and A2A
 * (`/.well-known/agent-card.json`, `POST /a2a`; docs/interop.md).
 * Every refusal is a coded Hermes error; nothing a client sends can take it down. Only loopback
 * Host values (and the allowed ones) and same-origin browsers (and the allowed origins) are
 * served: see AccessPolicy. `POST /hermes/v1/invoke` is answered by the app's own `fetch` before
 * hono routes (invoke-route.ts): serve the app through `app.fetch` (or `app.request`), not mounted
 * inside another hono app with `route()`, which copies only hono's routes.
 *
 * @example
 * const app = createGatewayApp({ node, registry, meshName: "demo", stats, dir, host: "127.0.0.1" });
 * Bun.serve({ port: 8000, fetch: (req, server) => app.fetch(req, { server, listener: "tcp" }), websocket });
 * // On Deno: Deno.serve({ port: 8000 }, (req) => app.fetch(req, { server: undefined, listener: "tcp" }));
 * await app.close(); // when the gateway stops, after its listeners
 */
export function createGatewayApp(deps: GatewayDeps): GatewayApp {
  const app = new Hono<{ Bindings: GatewayBindings }>();
  const access = new AccessPolicy({
    ...(deps.host && { boundHost: deps.host }),
    ...(deps.allowedHosts && { allowedHosts: deps.allowedHosts }),
    ...(deps.allowedOrigins && { allowedOrigins: deps.allowedOrigins }),
    ...(deps.token && { token: deps.token }),
  });
  const traceLookups = new TurnTaking(TRACE_LOOKUPS_AT_ONCE);
  const recent = new RecentTraces();
  const invoke = new InvokeHandler(deps.node, deps.registry, recent, deps.events);
  const history =
    deps.history ??
    new HistorySampler({
      registry: deps.registry,
      stats: deps.stats,
      deadLetters: () => deps.node.deadLetters(),
      ...(deps.dir && { supervisorLog: join(deps.dir, "logs", "supervisor.jsonl") }),
    });
  const counts: Record<string, number> = {};
  const limit = deps.bodyLimit ?? 1024 * 1024;

  const count = (route: string, status: number) => {
    const key = `${route} ${status}`;
    counts[key] = (counts[key] ?? 0) + 1;
  };
  app.use("*", async (c, next) => {
    await next();
    count(c.req.routePath, c.res.status);
  });

  // Host and browser origin (DNS rebinding, cross-site requests and WebSockets), before anything else.
  app.use("*", async (c, next) => {
    const verdict = access.check(accessRequestOf(c.req.raw, c.req.path, c.env?.listener === "unix"));
    if (verdict.type === "refused") return c.json(verdict.error.toPayload(), verdict.status, verdict.headers);
    if (verdict.cors) {
      // An allowed foreign origin: its preflight is answered here (browsers send it without the token).
      if (c.req.method === "OPTIONS") {
        return c.body(null, 204, { ...verdict.cors, "access-control-allow-methods": "GET, POST, DELETE", "access-control-allow-headers": allowedHeaders(c.req.header("access-control-request-headers")), "access-control-max-age": "600" });
      }
      await next();
      for (const [name, value] of Object.entries(verdict.cors)) c.res.headers.set(name, value);
      return;
    }
    return next();
  });

  // Authentication: everything but /health, the dashboard page itself (its API calls carry the token) and the public A2A agent card.
  app.use("*", async (c, next) => {
    if (c.req.path === "/health" || c.req.path === "/" || c.req.path === AGENT_CARD_PATH) return next();
    const verdict = access.checkToken(c.req.path, c.req.header("authorization"), c.req.query("token"));
    if (verdict.type === "refused") return c.json(verdict.error.toPayload(), verdict.status, verdict.headers);
    return next();
  });

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

  // The charts, the restarts-and-crashes timeline and the dead letters: what came after the page's cursor.
  app.get("/api/history", async (c) => {
    if (!deps.history) await history.tick();
    const after = Number(c.req.query("after") ?? 0);
    return c.json(history.history.view(Number.isFinite(after) && after > 0 ? after : 0));
  });

  // One flow across actors, rebuilt from the mesh's event logs (the dashboard's trace view).
  // Asynchronous reads with a deadline: a lookup in a big log never holds up /health or invokes.
  app.get("/api/trace/:id", async (c) => {
    const id = c.req.param("id");
    const t0 = performance.now();
    const asked = Number(c.req.query("timeout_ms") ?? TRACE_TIMEOUT_MS);
    const budget = Number.isFinite(asked) ? Math.min(Math.max(asked, 0), TRACE_TIMEOUT_MS) : TRACE_TIMEOUT_MS;
    if (!deps.dir) return c.json({ trace_id: id, spans: [], text: renderTrace(id, []), truncated: false });
    const lookup = await traceLookups.run(() =>
      findTrace(deps.dir!, id, { timeoutMs: Math.max(0, budget - (performance.now() - t0)), signal: c.req.raw.signal }),
    );
    const partial = lookup.truncated ? `\n(partial: the lookup stopped early, ${lookup.reason})` : "";
    return c.json({
      trace_id: id,
      spans: lookup.spans,
      text: renderTrace(id, lookup.spans) + partial,
      truncated: lookup.truncated,
      ...(lookup.reason && { reason: lookup.reason }),
      scanned_bytes: lookup.scannedBytes,
      elapsed_ms: Math.round((performance.now() - t0) * 10) / 10,
    });
  });

  // The page holds no data (its script fetches it with the token); no referrer, so a ?token= in its URL goes nowhere else.
  app.get("/", (c) => c.html(dashboardPage(deps.meshName), 200, { "referrer-policy": "no-referrer" }));

  // MCP tools (docs/interop.md): the actor capabilities that declare an input schema. Host, Origin and the token were checked above.
  mountMcp(app, { registry: deps.registry, mesh: deps.node, meshName: deps.meshName, bodyLimit: limit, access: false });
  // A2A (docs/interop.md): the agent card and JSON-RPC, each capability a skill, each task a request.
  const a2a = mountA2A(app, { node: deps.node, registry: deps.registry, meshName: deps.meshName, bodyLimit: limit, onFinished: (summary) => recent.add(summary), ...(deps.token && { token: deps.token }), ...(deps.dir && { dir: deps.dir }) });

  app.notFound((c) => c.json(new HermesError(ErrorCode.UNROUTABLE, `no route ${c.req.method} ${c.req.path}`, { target: c.req.path, known: [INVOKE_PATH, "/hermes/v1/stream", "/health", "/actors", "/metrics", MCP_PATH, AGENT_CARD_PATH, A2A_PATH, "/"] }).toPayload(), 404));
  app.onError((error, c) => c.json(HermesError.from(error).toPayload(), 500));
  // The invoke route is answered before hono sees it (invoke-route.ts); everything else is hono's.
  const invokeRoute = new InvokeRoute({ access, invoke, bodyLimit: limit, count });
  const honoFetch = app.fetch;
  app.fetch = (request, env, executionCtx) =>
    isInvokeRequest(request) ? invokeRoute.serve(request, (env as GatewayBindings | undefined)?.listener === "unix") : honoFetch(request, env, executionCtx);
  return Object.assign(app, { close: () => a2a.close() });
}

/** What an allowed origin's browser may send: ours, and the MCP client's `Mcp-Param-*` headers it asks for (their names vary by tool). */
const CORS_HEADERS = "authorization, content-type, traceparent, a2a-version, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name, last-event-id";
function allowedHeaders(requested: string | undefined): string {
  const params = (requested ?? "").split(",").map((name) => name.trim().toLowerCase()).filter((name) => /^mcp-param-[a-z0-9-]{1,64}$/.test(name));
  return [CORS_HEADERS, ...new Set(params)].join(", ");
}

/** At most `limit` tasks at a time; the others wait in order. */
class TurnTaking {
  readonly #limit: number;
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(limit: number) {
    this.#limit = limit;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#limit) {
      const turn = Promise.withResolvers<void>();
      this.#waiting.push(turn.resolve);
      await turn.promise;
    } else this.#running++;
    try {
      return await task();
    } finally {
      // The slot passes straight to the next in line, or is freed.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}
