/** http_fetch against real local HTTP servers: the allow-list, redirects checked hop by hop, the body cap and the deadline. */
import { afterAll, describe, expect, test } from "bun:test";
import { ToolRegistry, type ToolContext, type ToolResult } from "../../src/agent/tool-registry.ts";
import { builtinTools, httpFetchTool } from "../../src/agent/tools/builtin-tools.ts";
import { ErrorCode } from "../../mesh/errors.ts";

const hold = Promise.withResolvers<void>(); // slow endpoints wait on this until the tests end
const other = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("other origin") });
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const url = new URL(request.url);
    switch (url.pathname) {
      case "/hello":
        return new Response("hello", { headers: { "x-kind": "greeting" } });
      case "/echo":
        return Response.json({ method: request.method, header: request.headers.get("x-token"), body: await request.text() });
      case "/missing":
        return new Response("not here", { status: 404 });
      case "/big":
        return new Response("z".repeat(1_000_000));
      case "/redirect-in":
        return Response.redirect("/hello", 302);
      case "/redirect-out":
        return Response.redirect(`${other.url.origin}/`, 302);
      case "/see-other":
        return Response.redirect("/echo", 303);
      case "/loop":
        return Response.redirect("/loop", 302);
      case "/slow":
        await hold.promise;
        return new Response("too late");
      case "/slow-body":
        return new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode("first part")) }));
      default:
        return new Response("?", { status: 500 });
    }
  },
});
afterAll(() => {
  hold.resolve();
  server.stop(true);
  other.stop(true);
});

const origin = server.url.origin;
const registry = new ToolRegistry([httpFetchTool({ allowedOrigins: [origin], timeoutMs: 200, maxBodyBytes: 1024, maxRedirects: 3 })]);
const ctx: ToolContext = { trace_id: "t", signal: new AbortController().signal };
const call = (args: object) => registry.call("http_fetch", args, ctx);

function value(result: ToolResult): Record<string, unknown> {
  if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.error)}`);
  return result.value as Record<string, unknown>;
}
function error(result: ToolResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
  return result.error;
}

describe("allowed origins", () => {
  test("returns status, headers and body", async () => {
    const got = value(await call({ url: `${origin}/hello` }));
    expect(got).toMatchObject({ status: 200, url: `${origin}/hello`, body: "hello", truncated: false });
    expect((got.headers as Record<string, string>)["x-kind"]).toBe("greeting");
  });

  test("sends method, headers and body; a lower-case method is normalised", async () => {
    const result = await call({ url: `${origin}/echo`, method: "post", headers: { "x-token": "t1" }, body: "payload" });
    expect(JSON.parse(value(result).body as string)).toEqual({ method: "POST", header: "t1", body: "payload" });
    expect(result.normalized).toEqual(['method: "post" → "POST" (enum case)']);
  });

  test("an HTTP error status is a result the model can read, not a failure", async () => {
    expect(value(await call({ url: `${origin}/missing` }))).toMatchObject({ status: 404, body: "not here" });
  });

  test("a large body is cut at the cap and marked truncated", async () => {
    const got = value(await call({ url: `${origin}/big` }));
    expect(got.body).toBe("z".repeat(1024));
    expect(got.truncated).toBe(true);
  });

  test("redirects within the allowed origins are followed; 303 continues as a GET", async () => {
    expect(value(await call({ url: `${origin}/redirect-in` }))).toMatchObject({ status: 200, url: `${origin}/hello`, body: "hello" });
    const seeOther = value(await call({ url: `${origin}/see-other`, method: "POST", body: "x" }));
    expect(JSON.parse(seeOther.body as string)).toMatchObject({ method: "GET", body: "" });
  });

  test("endless redirects stop at the limit with code 2", async () => {
    expect(error(await call({ url: `${origin}/loop` }))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, detail: "more than 3 redirects" });
  });
});

describe("refusals", () => {
  test("an origin outside the allow-list is code 2 naming the allowed origins", async () => {
    expect(error(await call({ url: `${other.url.origin}/` }))).toMatchObject({
      error_code: ErrorCode.INVALID_REQUEST,
      reason: `origin ${other.url.origin} is not in the allow-list`,
      expected: `a URL on one of: ${origin}`,
      allowed_origins: [origin],
    });
  });

  test("a redirect to an origin outside the allow-list is not followed", async () => {
    expect(error(await call({ url: `${origin}/redirect-out` }))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, allowed_origins: [origin] });
  });

  test("by default nothing is allowed", async () => {
    const closed = new ToolRegistry(builtinTools());
    expect(error(await closed.call("http_fetch", { url: `${origin}/hello` }, ctx))).toMatchObject({
      error_code: ErrorCode.INVALID_REQUEST,
      reason: "no origin is allowed: this agent cannot fetch anything",
      allowed_origins: [],
    });
  });

  test("a URL that does not parse is code 2", async () => {
    expect(error(await call({ url: "not a url" }))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, expected: "an absolute http(s) URL" });
  });

  test("an allowed server that is down is code 10", async () => {
    const gone = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const downOrigin = gone.url.origin;
    gone.stop(true);
    const tools = new ToolRegistry([httpFetchTool({ allowedOrigins: [downOrigin] })]);
    expect(error(await tools.call("http_fetch", { url: `${downOrigin}/` }, ctx))).toMatchObject({ error_code: ErrorCode.UNAVAILABLE });
  });
});

describe("the deadline", () => {
  test("a server that does not answer in time is code 3", async () => {
    expect(error(await call({ url: `${origin}/slow` }))).toMatchObject({ error_code: ErrorCode.TASK_TIMEOUT, timeout_ms: 200 });
  });

  test("the deadline covers the body too", async () => {
    expect(error(await call({ url: `${origin}/slow-body` }))).toMatchObject({ error_code: ErrorCode.TASK_TIMEOUT });
  });
});

test("allowed origins are normalised, and one that is not a URL is refused at construction", async () => {
  const tools = new ToolRegistry([httpFetchTool({ allowedOrigins: [`${origin.toUpperCase()}/any/path`] })]);
  expect((await tools.call("http_fetch", { url: `${origin}/hello` }, ctx)).ok).toBe(true);
  expect(() => httpFetchTool({ allowedOrigins: ["example.com"] })).toThrow("is not an http(s) URL");
});
