import { Buffer } from "node:buffer";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { accessRequestOf, type AccessPolicy, type AccessVerdict } from "./access-policy.ts";
import type { InvokeHandler } from "./invoke-handler.ts";

/** The route of docs/protocol.md §7. */
export const INVOKE_PATH = "/hermes/v1/invoke";
const ACCEPTED_TYPES = ["application/hermes+json", "application/json"];
/** The key the request counts of `/metrics` give an access refusal (hono's name for the `*` middleware that refused, as before this route left hono). */
const REFUSED_ROUTE = "/*";

/** What the invoke route needs from the app around it. */
export interface InvokeRouteDeps {
  access: AccessPolicy;
  invoke: InvokeHandler;
  /** Largest request body, bytes. */
  bodyLimit: number;
  /** Counts one answered request for `/metrics`, by route and status. */
  count(route: string, status: number): void;
}

/**
 * True for `POST /hermes/v1/invoke`, with or without a query: the requests the gateway's listener
 * hands to {@link InvokeRoute} instead of hono. The path is read from the URL as hono reads it,
 * without building a URL object.
 *
 * @example
 * isInvokeRequest(new Request("http://127.0.0.1:8000/hermes/v1/invoke", { method: "POST" })); // true
 * isInvokeRequest(new Request("http://127.0.0.1:8000/hermes/v1/invoke/", { method: "POST" })); // false: hono answers 404
 * isInvokeRequest(new Request("http://127.0.0.1:8000/hermes/v1/%69nvoke", { method: "POST" })); // true
 */
export function isInvokeRequest(request: Request): boolean {
  if (request.method !== "POST") return false;
  const url = request.url;
  const start = url.indexOf("/", url.indexOf(":") + 4);
  if (start === -1) return false;
  if (url.startsWith(INVOKE_PATH, start)) {
    const end = start + INVOKE_PATH.length;
    if (end === url.length || url.charCodeAt(end) === 63) return true; // "?"
  }
  // A percent-encoded spelling of the path (`/hermes/v1/%69nvoke`) is the route too, as hono decodes paths.
  const query = url.indexOf("?", start);
  const path = url.slice(start, query === -1 ? undefined : query);
  if (!path.includes("%")) return false;
  try {
    return decodeURI(path) === INVOKE_PATH;
  } catch {
    return false;
  }
}

/**
 * `POST /hermes/v1/invoke`, served straight from the listener's fetch: the one route every
 * request of a loaded gateway takes, where hono's dispatch, middleware chain and context cost
 * more than the route's own work. It applies the same policy as the rest of the app, in the
 * same order and with the same answers: Host and browser origin (403 code 5), the bearer token
 * (401 code 5; `?token=` is refused here), the body limit (413 code 6, by Content-Length or
 * counted as a chunked body streams), the content type (415), the JSON (400 code 2); then the
 * invoke handler's answer. An allowed foreign origin's answer carries its CORS headers, and
 * every answer is counted for `/metrics` as it was when hono served the route.
 *
 * @example
 * const route = new InvokeRoute({ access, invoke, bodyLimit: 1 << 20, count: (route, status) => {} });
 * const fetch = (request: Request) => (isInvokeRequest(request) ? route.serve(request, false) : app.fetch(request));
 */
export class InvokeRoute {
  readonly #deps: InvokeRouteDeps;

  constructor(deps: InvokeRouteDeps) {
    this.#deps = deps;
  }

  /** Answers one invoke request; `unix` when it came over `<dir>/gateway.sock` (no Host check). Never rejects. */
  async serve(request: Request, unix: boolean): Promise<Response> {
    const headers = request.headers;
    const verdict = this.#deps.access.check(accessRequestOf(request, INVOKE_PATH, unix));
    if (verdict.type === "refused") return this.#counted(REFUSED_ROUTE, refusal(verdict));
    // Every answer past the origin check carries an allowed foreign origin's CORS headers, a 401 too: its page can read why.
    const token = this.#deps.access.checkToken(INVOKE_PATH, headers.get("authorization") ?? undefined, queryToken(request.url));
    let route = INVOKE_PATH;
    let response: Response;
    if (token.type === "refused") {
      route = REFUSED_ROUTE;
      response = refusal(token);
    } else {
      try {
        response = await this.#answer(request);
      } catch (error) {
        response = json(HermesError.from(error).toPayload(), 500);
      }
    }
    if (verdict.cors) for (const [name, value] of Object.entries(verdict.cors)) response.headers.set(name, value);
    return this.#counted(route, response);
  }

  async #answer(request: Request): Promise<Response> {
    const headers = request.headers;
    const limit = this.#deps.bodyLimit;
    // A body with a Content-Length is judged by it before any of it is read; a chunked one is counted as it streams.
    const length = headers.get("content-length");
    const sized = length !== null && !headers.has("transfer-encoding");
    if (sized && parseInt(length, 10) > limit) return tooLarge(limit);
    const type = (headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    const text = sized ? undefined : await readLimited(request, limit);
    if (text === null) return tooLarge(limit);
    if (!ACCEPTED_TYPES.includes(type)) {
      return json(new HermesError(ErrorCode.INVALID_REQUEST, `unsupported content type '${type || "(none)"}'`, { reason: "content type", expected: ACCEPTED_TYPES }).toPayload(), 415);
    }
    let body: unknown;
    try {
      body = JSON.parse(text ?? (await request.text()));
    } catch (error) {
      return json(new HermesError(ErrorCode.INVALID_REQUEST, `the body is not JSON: ${(error as Error).message}`, { reason: "bad JSON", expected: "a JSON object" }).toPayload(), 400);
    }
    const result = await this.#deps.invoke.handle(body, headers.get("traceparent") ?? undefined, request.signal);
    return json(result.body, result.status, result.headers);
  }

  #counted(route: string, response: Response): Response {
    this.#deps.count(route, response.status);
    return response;
  }
}

/** A JSON answer, with the content type hono's `c.json` gave it. */
function json(body: unknown, status: number, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

function refusal(verdict: Extract<AccessVerdict, { type: "refused" }>): Response {
  return json(verdict.error.toPayload(), verdict.status, verdict.headers);
}

function tooLarge(limit: number): Response {
  return json(new HermesError(ErrorCode.RESOURCE_EXHAUSTED, `request body over ${limit} bytes`, { resource: "body_bytes", limit }).toPayload(), 413);
}

/** `?token=` of the URL, if any: refused on this route by the access policy, so a token never rides in a logged URL. */
function queryToken(url: string): string | undefined {
  if (!url.includes("?")) return undefined;
  return new URL(url).searchParams.get("token") ?? undefined;
}

/** A body without a Content-Length, read as it streams: null as soon as it passes `limit` bytes (the rest is not read). */
async function readLimited(request: Request, limit: number): Promise<string | null> {
  if (request.body === null) return "";
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of request.body) {
    total += chunk.byteLength;
    if (total > limit) return null;
    chunks.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}
