import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

/** Who may reach the gateway, beyond loopback callers without a browser. */
export interface AccessSettings {
  /** The name or address the TCP listener is bound to (`--host`): served as a Host value like the loopback names. */
  boundHost?: string;
  /** More Host values to serve (port ignored): names, addresses, `*.example.com`, or `*` for any. */
  allowedHosts?: readonly string[];
  /** More browser origins to serve, exactly (`https://app.example.com:8443`), or `*` for any. */
  allowedOrigins?: readonly string[];
  /** Bearer token clients must send; none when unset. */
  token?: string;
}

/** What the gateway knows of one request when it decides. */
export interface AccessRequest {
  method: string;
  path: string;
  /** The Host header. */
  host: string | undefined;
  origin: string | undefined;
  /** Sec-Fetch-Site and Sec-Fetch-Mode: browsers send them, other clients do not. */
  fetchSite: string | undefined;
  fetchMode: string | undefined;
  /** Came in over `<dir>/gateway.sock`, which no browser and no DNS name can reach. */
  unix: boolean;
}

/**
 * What the policy reads of an HTTP request: its method, the route's path, and the headers it decides on.
 *
 * @example
 * policy.check(accessRequestOf(request, "/actors", false));
 */
export function accessRequestOf(request: Request, path: string, unix: boolean): AccessRequest {
  const headers = request.headers;
  return {
    method: request.method,
    path,
    host: headers.get("host") ?? undefined,
    origin: headers.get("origin") ?? undefined,
    fetchSite: headers.get("sec-fetch-site") ?? undefined,
    fetchMode: headers.get("sec-fetch-mode") ?? undefined,
    unix,
  };
}

/** The verdict on one request: refused (with the HTTP status and the coded error), or served, with CORS headers for an allowed foreign origin. */
export type AccessVerdict =
  | { type: "refused"; status: 401 | 403; error: HermesError; headers?: Record<string, string> }
  | { type: "served"; cors?: Record<string, string> };

/** Loopback names and addresses, always served (127.0.0.0/8, ::1, localhost). */
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\]|::1)$/;
/** Routes a browser may open from anywhere (a link, a bookmark): the dashboard page holds no data of its own. */
const NAVIGABLE = new Set(["/"]);
/** What a refused HTTP client should send (it names the variables, never a value). */
const TOKEN_HINT =
  "send `Authorization: Bearer <token>`, the value of HERMES_GATEWAY_TOKEN (or of the variable the mesh file's gateway.token_env names) where the mesh runs";

/** The one route that takes `?token=`: a browser cannot set Authorization on a WebSocket. */
const QUERY_TOKEN_ROUTES = new Set(["/hermes/v1/stream"]);

/**
 * Whether a bind address or Host name is the loopback interface.
 *
 * @example
 * isLoopback("127.0.0.1"); // true
 * isLoopback("0.0.0.0"); // false: every interface
 */
export function isLoopback(host: string): boolean {
  return LOOPBACK.test(host.toLowerCase());
}

/**
 * The gateway's guard against being driven from a browser on another site. A request is served
 * when (1) its Host is a loopback name, the bound host or in `allowedHosts` (DNS rebinding: a
 * foreign name resolving to 127.0.0.1 carries that name as Host); requests over the Unix
 * socket skip this check; (2) a browser sent it from the gateway's own origin or an allowed one:
 * an `Origin` header must name the same host and port as Host (or be in `allowedOrigins`), and
 * `Sec-Fetch-Site: same-site` / `cross-site` without such an origin is refused, except a plain
 * navigation to the dashboard page; (3) the bearer token matches, when one is set. Refusals are
 * HTTP 403 with code 5 (AUTH_FAILED, `auth_method: "host"` or `"origin"`, and `reason`), or
 * 401 code 5 for the token. Tokens are compared as HMACs in constant time; `?token=` counts only
 * on the WebSocket route.
 *
 * @example
 * const policy = new AccessPolicy({ boundHost: "127.0.0.1", allowedOrigins: ["https://ops.example.com"] });
 * policy.check({ method: "GET", path: "/actors", host: "rebind.evil.example", origin: undefined, fetchSite: undefined, fetchMode: undefined, unix: false });
 * // { type: "refused", status: 403, error: HermesError(5, "host 'rebind.evil.example' is not served ...") }
 */
export class AccessPolicy {
  readonly #hosts: Set<string>;
  readonly #hostSuffixes: string[];
  readonly #anyHost: boolean;
  readonly #origins: Set<string>;
  readonly #anyOrigin: boolean;
  readonly #key = randomBytes(32);
  readonly #token: Buffer | undefined;

  constructor(settings: AccessSettings = {}) {
    const hosts = (settings.allowedHosts ?? []).map((h) => h.toLowerCase());
    this.#anyHost = hosts.includes("*");
    this.#hostSuffixes = hosts.filter((h) => h.startsWith("*.")).map((h) => h.slice(1));
    this.#hosts = new Set(hosts.filter((h) => !h.startsWith("*")).map(hostName));
    if (settings.boundHost) this.#hosts.add(hostName(settings.boundHost.toLowerCase()));
    const origins = (settings.allowedOrigins ?? []).map((o) => o.toLowerCase());
    this.#anyOrigin = origins.includes("*");
    this.#origins = new Set(origins);
    this.#token = settings.token === undefined ? undefined : this.#digest(settings.token);
  }

  /** Decides on a request's Host and browser origin (not the token: see `checkToken`). */
  check(request: AccessRequest): AccessVerdict {
    if (!request.unix) {
      const host = request.host === undefined ? undefined : bareHost(request.host.toLowerCase());
      if (host === undefined || !this.#hostAllowed(host)) {
        const shown = request.host ?? "(none)";
        return refuse("host", `host '${shown}' is not served: only loopback names, the bound host and gateway.allowed_hosts are`, { host: shown });
      }
    }
    const origin = request.origin?.toLowerCase();
    if (origin !== undefined) {
      if (this.#isOwnOrigin(origin, request.host)) return { type: "served" };
      if (this.#anyOrigin || this.#origins.has(origin)) return { type: "served", cors: corsHeaders(request.origin!) };
      return refuse("origin", `origin '${request.origin}' is not served: only the gateway's own origin and gateway.allowed_origins are`, { origin: request.origin });
    }
    const site = request.fetchSite?.toLowerCase();
    if (site === "cross-site" || site === "same-site") {
      const navigation = request.method === "GET" && request.fetchMode === "navigate" && NAVIGABLE.has(request.path);
      if (!navigation) return refuse("origin", `a ${site} browser request is not served without an allowed Origin`, { fetch_site: site });
    }
    return { type: "served" };
  }

  /**
   * Decides on the bearer token: from `Authorization: Bearer`, or `?token=` on the WebSocket
   * route only (anywhere else a query token is refused, so it never ends up in logs of invokes).
   */
  checkToken(path: string, authorization: string | undefined, queryToken: string | undefined): AccessVerdict {
    if (this.#token === undefined) return { type: "served" };
    let given = authorization?.startsWith("Bearer ") ? authorization.slice(7) : undefined;
    if (given === undefined && queryToken !== undefined) {
      if (!QUERY_TOKEN_ROUTES.has(path)) return unauthorized("?token= is accepted only by the WebSocket (/hermes/v1/stream): send Authorization: Bearer <token>");
      given = queryToken;
    }
    if (given === undefined) return unauthorized(`a bearer token is required: ${TOKEN_HINT}`);
    return timingSafeEqual(this.#digest(given), this.#token) ? { type: "served" } : unauthorized(`wrong token: ${TOKEN_HINT}`);
  }

  /** Equal-length HMACs, compared in constant time: neither the token's bytes nor its length leak. */
  #digest(token: string): Buffer {
    return createHmac("sha256", this.#key).update(token).digest();
  }

  #hostAllowed(host: string): boolean {
    return LOOPBACK.test(host) || this.#anyHost || this.#hosts.has(host) || this.#hostSuffixes.some((suffix) => host.endsWith(suffix));
  }

  /** The page that sent it was served by this gateway under the same Host (scheme http, or https behind a TLS proxy). */
  #isOwnOrigin(origin: string, host: string | undefined): boolean {
    if (host === undefined || !(origin.startsWith("http://") || origin.startsWith("https://"))) return false;
    try {
      return new URL(origin).host === host.toLowerCase();
    } catch {
      return false;
    }
  }
}

/** A Host value without its port: `[::1]:8000` -> `[::1]`, `localhost:8000` -> `localhost`; a trailing dot dropped. */
function bareHost(host: string): string {
  const bare = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.includes(":") && host.indexOf(":") === host.lastIndexOf(":") ? host.slice(0, host.indexOf(":")) : host;
  return bare.endsWith(".") ? bare.slice(0, -1) : bare;
}

/** A configured name or address as it appears in a Host header: an IPv6 address in brackets, no port. */
function hostName(configured: string): string {
  const ipv6 = !configured.startsWith("[") && configured.indexOf(":") !== configured.lastIndexOf(":");
  return ipv6 ? `[${configured}]` : bareHost(configured);
}

function corsHeaders(origin: string): Record<string, string> {
  return { "access-control-allow-origin": origin, vary: "Origin" };
}

function refuse(method: "host" | "origin", reason: string, fields: Record<string, unknown>): AccessVerdict {
  return { type: "refused", status: 403, error: new HermesError(ErrorCode.AUTH_FAILED, reason, { auth_method: method, reason, ...fields }) };
}

function unauthorized(reason: string): AccessVerdict {
  return {
    type: "refused",
    status: 401,
    error: new HermesError(ErrorCode.AUTH_FAILED, reason, { auth_method: "bearer", reason }),
    headers: { "www-authenticate": 'Bearer realm="hermes-mesh"' },
  };
}
