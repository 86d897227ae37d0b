/**
 * The gateway's A2A routes (docs/interop.md): the agent card at `/.well-known/agent-card.json`
 * (public, built from the registry on each request) and JSON-RPC at `POST /a2a`, A2A 1.0 and
 * 0.3 method names on one endpoint. The JSON-RPC framing is checked here (-32700, -32600,
 * -32601, -32009); the methods run in a2a-agent.ts on `@a2a-js/sdk`, loaded on the first call.
 */
import type { Context, Env, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Registry } from "../../mesh/registry.ts";
import type { TraceSummary } from "./recent-traces.ts";
import { checkPayload } from "../../mesh/frames.ts";
import { VERSION } from "../version.ts";
import { A2A_VERSIONS, AGENT_CARD_PATH, agentCard, legacyAgentCard, skillsOf, type CardSettings } from "./a2a-card.ts";
import type { A2AMesh, A2AServer } from "./a2a-agent.ts";

/** The JSON-RPC endpoint's path. */
export const A2A_PATH = "/a2a";

/** What the A2A routes need from the gateway. */
export interface A2ADeps {
  /** The gateway's mesh node (what the agent uses of it). */
  node: A2AMesh;
  registry: Registry;
  meshName: string;
  /** Set when the gateway wants a bearer token: the card then says so. */
  token?: string;
  /** The mesh directory (tasks in `<dir>/data/a2a-tasks.db`; in memory without one). */
  dir?: string;
  /** Largest request body, bytes. Default 1 MiB. */
  bodyLimit?: number;
  /** Each task's request, once over, for the dashboard's recent traces. */
  onFinished?: (summary: TraceSummary) => void;
}

/** JSON-RPC's own error codes, and A2A's for an unsupported version. */
const RpcCode = { PARSE_ERROR: -32700, INVALID_REQUEST: -32600, METHOD_NOT_FOUND: -32601, INTERNAL_ERROR: -32603, VERSION_NOT_SUPPORTED: -32009 } as const;

const V1_METHODS = new Set([
  "SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask", "GetExtendedAgentCard",
  "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig",
]);
const LEGACY_METHODS = new Set([
  "message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe", "agent/getAuthenticatedExtendedCard",
  "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete",
]);
/** The methods an unknown-method error names. */
const SHOWN_METHODS = "SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask (A2A 1.0); message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe (0.3)";
const ACCEPTED_TYPES = ["application/json", "application/a2a+json"];
/** Deeper than any A2A request needs: a data part's payload may nest 512 levels (docs/protocol.md). */
const MAX_DEPTH = 520;
/** An SSE comment this often keeps a quiet stream open past the listener's idle timeout (120 s). */
const KEEP_ALIVE_MS = 15_000;

type RpcId = string | number | null;

/** The A2A routes once mounted: close() closes the task store (when the first A2A call opened it). */
export interface A2ARoutes {
  close(): Promise<void>;
}

/**
 * Adds the A2A routes to the gateway's app. Authentication is the app's: the card's path must
 * be exempt from its token check, `/a2a` must not. Call close() when the gateway stops: calls
 * after it are answered -32603.
 *
 * @example
 * const app = new Hono();
 * const a2a = mountA2A(app, { node, registry, meshName: "demo", dir, token });
 * // curl http://127.0.0.1:8000/.well-known/agent-card.json -H 'A2A-Version: 1.0'
 * await a2a.close();
 */
export function mountA2A<E extends Env>(app: Hono<E>, deps: A2ADeps): A2ARoutes {
  const limit = deps.bodyLimit ?? 1024 * 1024;
  let loading: Promise<A2AServer> | undefined;
  let closed = false;
  const server = (): Promise<A2AServer> => {
    if (closed) return Promise.reject(new Error("the gateway is stopping"));
    return (loading ??= import("./a2a-agent.ts")
      .then((m) => m.createA2AServer({ node: deps.node, registry: deps.registry, meshName: deps.meshName, version: VERSION, ...(deps.dir && { dir: deps.dir }), ...(deps.onFinished && { onFinished: deps.onFinished }) }))
      .catch((error) => {
        loading = undefined;
        throw error;
      }));
  };
  const settings = (c: Context): CardSettings => ({ url: endpointUrl(c), meshName: deps.meshName, version: VERSION, bearer: deps.token !== undefined });

  // A 1.0 client says so (the SDK's does); without A2A-Version a client is taken for 0.3, as the SDK's server does.
  app.get(AGENT_CARD_PATH, (c) => {
    const skills = skillsOf(deps.registry);
    const card = versionOf(c.req.header("a2a-version")) === A2A_VERSIONS.current ? agentCard(skills, settings(c)) : legacyAgentCard(skills, settings(c));
    return c.json(card, 200, { vary: "A2A-Version", "cache-control": "no-cache" });
  });

  app.post(
    A2A_PATH,
    bodyLimit({ maxSize: limit, onError: (c) => c.json(rpcError(null, RpcCode.INVALID_REQUEST, `request body over ${limit} bytes`), 413) }),
    async (c) => {
      const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      if (!ACCEPTED_TYPES.includes(type)) return c.json(rpcError(null, RpcCode.INVALID_REQUEST, `unsupported content type '${type || "(none)"}': send application/json`), 415);
      let body: unknown;
      try {
        body = JSON.parse(await c.req.text());
      } catch (error) {
        return c.json(rpcError(null, RpcCode.PARSE_ERROR, `parse error: the body is not JSON (${(error as Error).message})`));
      }
      const call = checkCall(body);
      if (call.type === "invalid") return c.json(rpcError(call.id, call.code, call.message));
      const version = c.req.header("a2a-version");
      if (version !== undefined && versionOf(version) === undefined) {
        return c.json(rpcError(call.id, RpcCode.VERSION_NOT_SUPPORTED, `A2A version '${version}' is not supported: this endpoint speaks ${A2A_VERSIONS.current} and ${A2A_VERSIONS.legacy}`));
      }
      let a2a: A2AServer;
      try {
        a2a = await server();
      } catch (error) {
        return c.json(rpcError(call.id, RpcCode.INTERNAL_ERROR, `the A2A endpoint could not start: ${(error as Error).message}`), 500);
      }
      const gone = new AbortController();
      const outcome = await a2a.handle(body as Record<string, unknown>, call.legacy, gone.signal);
      if (outcome.type === "response") return c.json(outcome.body as object);
      // Errors before the first event (an unknown task, a refused message) are a plain JSON-RPC answer, not a stream.
      let first: IteratorResult<unknown>;
      try {
        first = await outcome.events.next();
      } catch (error) {
        return c.json({ jsonrpc: "2.0", id: call.id, error: a2a.rpcError(error, call.legacy) });
      }
      return sse(first, outcome.events, (error) => ({ jsonrpc: "2.0", id: call.id, error: a2a.rpcError(error, call.legacy) }), () => gone.abort());
    },
  );

  return {
    async close() {
      closed = true;
      const opened = loading;
      loading = undefined;
      (await opened?.catch(() => undefined))?.close();
    },
  };
}

/** A JSON-RPC 2.0 request object (no batches), or why not. Which handler: by the method's name, 1.0 or 0.3. */
function checkCall(body: unknown): { type: "call"; id: RpcId; legacy: boolean } | { type: "invalid"; id: RpcId; code: number; message: string } {
  if (typeof body !== "object" || body === null) return { type: "invalid", id: null, code: RpcCode.INVALID_REQUEST, message: "invalid request: the body must be a JSON-RPC 2.0 request object" };
  if (Array.isArray(body)) return { type: "invalid", id: null, code: RpcCode.INVALID_REQUEST, message: "invalid request: batches are not supported, send one request object at a time" };
  const request = body as Record<string, unknown>;
  const id = request.id;
  const validId = id === undefined || id === null || typeof id === "string" || (typeof id === "number" && Number.isInteger(id));
  const shownId: RpcId = validId ? ((id ?? null) as RpcId) : null;
  if (!validId) return { type: "invalid", id: null, code: RpcCode.INVALID_REQUEST, message: "invalid request: id must be a string, an integer or null" };
  if (request.jsonrpc !== "2.0") return { type: "invalid", id: shownId, code: RpcCode.INVALID_REQUEST, message: `invalid request: jsonrpc must be "2.0"` };
  if (typeof request.method !== "string" || request.method === "") return { type: "invalid", id: shownId, code: RpcCode.INVALID_REQUEST, message: "invalid request: method must be a non-empty string" };
  try {
    checkPayload(request, MAX_DEPTH);
  } catch (error) {
    return { type: "invalid", id: shownId, code: RpcCode.INVALID_REQUEST, message: `invalid request: ${(error as Error).message}` };
  }
  if (V1_METHODS.has(request.method)) return { type: "call", id: shownId, legacy: false };
  if (LEGACY_METHODS.has(request.method)) return { type: "call", id: shownId, legacy: true };
  return { type: "invalid", id: shownId, code: RpcCode.METHOD_NOT_FOUND, message: `method not found: '${request.method}'. This endpoint serves ${SHOWN_METHODS}` };
}

function rpcError(id: RpcId, code: number, message: string): Record<string, unknown> {
  return { jsonrpc: "2.0", id, error: { code, message } };
}

/** "1.0" or "0.3" for a version this endpoint speaks (patch levels allowed: "0.3.0"), "0.3" when none is given, else undefined. */
function versionOf(header: string | undefined): string | undefined {
  if (header === undefined || header.trim() === "") return A2A_VERSIONS.legacy;
  const [major, minor = "0"] = header.trim().split(".");
  const version = `${Number(major)}.${Number(minor)}`;
  return version === A2A_VERSIONS.current || version === A2A_VERSIONS.legacy ? version : undefined;
}

/** The endpoint's URL as this client reaches it: its Host (checked by the access policy), and the scheme a TLS proxy says it used. */
function endpointUrl(c: Context): string {
  const url = new URL(c.req.url);
  const forwarded = c.req.header("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase();
  const scheme = forwarded === "https" || forwarded === "http" ? forwarded : url.protocol.slice(0, -1);
  return `${scheme}://${c.req.header("host") ?? url.host}${A2A_PATH}`;
}

/**
 * The stream as Server-Sent Events, one JSON-RPC response per `data:` line. When the client
 * goes, `onGone` tells the agent (a subscribe stream then ends, a2a-agent.ts), and the rest is
 * still read, unsent, to its end: a SendStreamingMessage stream must be, since the SDK saves a
 * task's updates as its stream is read, so a client that drops the connection finds the
 * finished task with GetTask (or SubscribeToTask) later.
 */
function sse(first: IteratorResult<unknown>, events: AsyncGenerator<unknown, void, undefined>, errorOf: (error: unknown) => unknown, onGone: () => void): Response {
  const encoder = new TextEncoder();
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        if (!open) return;
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          open = false;
          onGone();
        }
      };
      const keepAlive = setInterval(() => send(": keep-alive\n\n"), KEEP_ALIVE_MS);
      void (async () => {
        try {
          if (!first.done) {
            send(`data: ${JSON.stringify(first.value)}\n\n`);
            for await (const event of events) send(`data: ${JSON.stringify(event)}\n\n`);
          }
        } catch (error) {
          send(`data: ${JSON.stringify(errorOf(error))}\n\n`);
        } finally {
          clearInterval(keepAlive);
          if (open) {
            open = false;
            controller.close();
          }
        }
      })();
    },
    cancel() {
      open = false;
      onGone();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" } });
}
