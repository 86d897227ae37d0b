/**
 * `http_fetch`: HTTP requests to an allow-list of origins only, under a timeout, with the body
 * capped. Redirects are followed by hand so that every hop is checked against the allow-list.
 */
import { z } from "zod";
import { ErrorCode, HermesError } from "../../../mesh/errors.ts";
import { defineTool } from "../tool-definition.ts";
import { readCapped } from "./read-capped.ts";

/** Options of `http_fetch`. */
export interface HttpFetchOptions {
  /** Origins that may be fetched, e.g. "https://api.example.com" (default: none). */
  allowedOrigins?: readonly string[];
  /** Deadline of one fetch, body included, in milliseconds (default 10 s). */
  timeoutMs?: number;
  /** Body bytes kept (default 256 KiB); the rest is dropped and `truncated` set. */
  maxBodyBytes?: number;
  /** Redirects followed (default 5). */
  maxRedirects?: number;
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] as const;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * `http_fetch`: `{ url, method?, headers?, body? }` → `{ status, url, headers, body, truncated }`.
 * A URL whose origin is not allowed is code 2 naming the allowed origins (with none allowed,
 * nothing can be fetched); a fetch past the deadline is code 3; a server that cannot be
 * reached is code 10. An HTTP error status is a result, not a failure: the model reads it.
 *
 * @example
 * const fetchTool = httpFetchTool({ allowedOrigins: ["https://api.example.com"], timeoutMs: 5000 });
 * await registry.register(fetchTool).call("http_fetch", { url: "https://api.example.com/items" }, ctx);
 */
export function httpFetchTool(options: HttpFetchOptions = {}) {
  const allowed = new Set((options.allowedOrigins ?? []).map(originOf));
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxBodyBytes = options.maxBodyBytes ?? 256 * 1024;
  const maxRedirects = options.maxRedirects ?? 5;
  const check = (url: string, base?: URL): URL => {
    let parsed: URL;
    try {
      parsed = new URL(url, base);
    } catch {
      throw new HermesError(ErrorCode.INVALID_REQUEST, `not a URL: ${JSON.stringify(url)}`, { reason: "the url does not parse", expected: "an absolute http(s) URL" });
    }
    if (!allowed.has(parsed.origin)) {
      const list = [...allowed];
      throw new HermesError(ErrorCode.INVALID_REQUEST, `origin ${parsed.origin} is not allowed`, {
        reason: list.length === 0 ? "no origin is allowed: this agent cannot fetch anything" : `origin ${parsed.origin} is not in the allow-list`,
        expected: list.length === 0 ? "no URL (http_fetch is disabled by its allow-list)" : `a URL on one of: ${list.join(", ")}`,
        allowed_origins: list,
      });
    }
    return parsed;
  };

  return defineTool({
    name: "http_fetch",
    description: `Fetches a URL over HTTP and returns status, headers and body (at most ${maxBodyBytes} bytes). Allowed origins: ${[...allowed].join(", ") || "none"}.`,
    schema: z.object({
      url: z.string().describe("absolute http(s) URL on an allowed origin"),
      method: z.enum(METHODS).default("GET"),
      headers: z.record(z.string(), z.string()).optional().describe("request headers"),
      body: z.string().optional().describe("request body, for POST, PUT and PATCH"),
    }),
    async run(args, ctx) {
      const deadline = AbortSignal.timeout(timeoutMs);
      const signal = AbortSignal.any([ctx.signal, deadline]);
      let url = check(args.url);
      let { method, body } = args;
      try {
        for (let hop = 0; ; hop++) {
          const response = await fetch(url, { method, headers: args.headers, body, redirect: "manual", signal });
          const location = response.headers.get("location");
          if (REDIRECTS.has(response.status) && location) {
            await response.body?.cancel();
            if (hop >= maxRedirects) throw new HermesError(ErrorCode.INVALID_REQUEST, `more than ${maxRedirects} redirects`, { reason: `stopped after ${maxRedirects} redirects at ${url.href}` });
            url = check(location, url);
            // As browsers do: 303, and 301/302 after a POST, continue as a GET without a body.
            if (response.status === 303 || (response.status <= 302 && method === "POST")) [method, body] = ["GET", undefined];
            continue;
          }
          const read = response.body ? await readCapped(response.body, maxBodyBytes, { drain: false }) : { text: "", truncated: false };
          return { status: response.status, url: url.href, headers: Object.fromEntries(response.headers), body: read.text, truncated: read.truncated };
        }
      } catch (error) {
        if (error instanceof HermesError) throw error;
        if (deadline.aborted) {
          throw new HermesError(ErrorCode.TASK_TIMEOUT, `${url.href} did not answer within ${timeoutMs} ms`, { timeout_ms: timeoutMs }, { cause: error });
        }
        if (ctx.signal.aborted) throw error;
        throw new HermesError(ErrorCode.UNAVAILABLE, `fetching ${url.href} failed`, { reason: error instanceof Error ? error.message : String(error) }, { cause: error });
      }
    },
  });
}

/** A configured origin, normalised ("https://Example.com:443/x" → "https://example.com"); a typo fails at construction. */
function originOf(text: string): string {
  const origin = URL.canParse(text) ? new URL(text).origin : "null";
  if (origin === "null") throw new HermesError(ErrorCode.INVALID_REQUEST, `http_fetch: allowed origin ${JSON.stringify(text)} is not an http(s) URL`);
  return origin;
}
