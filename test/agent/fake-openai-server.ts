/**
 * A local stand-in for an OpenAI-compatible endpoint: Bun.serve on 127.0.0.1 and a random
 * port, answering `POST /v1/chat/completions` from a queue each test fills, and recording every
 * request so tests can assert the exact wire format the client sent.
 */
import type { Server } from "bun";

/** One scripted answer of the fake server. */
export type FakeReply =
  /** 200 with a plain assistant message. */
  | { kind: "text"; content: string; usage?: { prompt_tokens: number; completion_tokens: number; total_tokens?: number }; model?: string }
  /** 200 with tool calls; `arguments` as given (a string on the real wire). */
  | { kind: "tool_calls"; calls: Array<{ id: string; name: string; arguments: string }>; content?: string | null }
  /** 429, with `Retry-After` when given (seconds or an HTTP date). */
  | { kind: "rate_limited"; retryAfter?: string }
  /** Any status with an OpenAI-style error body, e.g. 500, 401, 400, 404. */
  | { kind: "error"; status: number; message: string; headers?: Record<string, string> }
  /** Holds the request until the client hangs up (or `maxMs` passes, default 10 s), then answers 200 "late". */
  | { kind: "slow"; maxMs?: number }
  /** 200 whose body is not JSON. */
  | { kind: "malformed"; body?: string };

/** A request as the fake server received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The parsed JSON body (undefined when it was not JSON). */
  body: any;
  /** Date.now() when it arrived. */
  at: number;
}

/** A running fake server; `await using` stops it. */
export interface FakeOpenAIServer extends AsyncDisposable {
  /** Base URL, up to and including /v1. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Queues answers, answered in order; a request finding the queue empty gets a 500 naming it. */
  push(...replies: FakeReply[]): void;
  /** Resolves once `count` requests have arrived (at once if they already have). */
  waitForRequests(count: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a fake server.
 *
 * @example
 * await using server = startFakeOpenAI();
 * server.push({ kind: "text", content: "hello" });
 * const model = new OpenAICompatibleModel({ baseUrl: server.url, apiKey: "test-key" });
 */
export function startFakeOpenAI(): FakeOpenAIServer {
  const queue: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0, // "slow" replies hold connections open longer than Bun's default 10 s
    async fetch(req) {
      const text = await req.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      requests.push({ method: req.method, path: new URL(req.url).pathname, headers: Object.fromEntries(req.headers), body, at: Date.now() });
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      const reply = queue.shift();
      if (!reply) return errorResponse(500, `fake server: no reply queued for request #${requests.length}`);
      return answer(reply, req, (body as { model?: string } | undefined)?.model ?? "fake-model");
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    requests,
    push: (...replies) => queue.push(...replies),
    waitForRequests(count) {
      if (requests.length >= count) return Promise.resolve();
      const { promise, resolve } = Promise.withResolvers<void>();
      waiters.push({ count, resolve });
      return promise;
    },
    stop: () => server.stop(true),
    [Symbol.asyncDispose]: () => server.stop(true),
  };
}

async function answer(reply: FakeReply, req: Request, model: string): Promise<Response> {
  switch (reply.kind) {
    case "text":
      return completion(model, { role: "assistant", content: reply.content }, "stop", reply.usage, reply.model);
    case "tool_calls": {
      const tool_calls = reply.calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
      return completion(model, { role: "assistant", content: reply.content ?? null, tool_calls }, "tool_calls");
    }
    case "rate_limited":
      return errorResponse(429, "Rate limit reached", reply.retryAfter === undefined ? {} : { "retry-after": reply.retryAfter });
    case "error":
      return errorResponse(reply.status, reply.message, reply.headers);
    case "slow": {
      // Waits for the client to give up, not for a fixed time: the test ends as soon as it does.
      const { promise, resolve } = Promise.withResolvers<void>();
      req.signal.addEventListener("abort", () => resolve(), { once: true });
      const timer = setTimeout(resolve, reply.maxMs ?? 10_000);
      await promise;
      clearTimeout(timer);
      return completion(model, { role: "assistant", content: "late" }, "stop");
    }
    case "malformed":
      return new Response(reply.body ?? "<html>not json", { status: 200, headers: { "content-type": "application/json" } });
  }
}

function completion(model: string, message: unknown, finish_reason: string, usage?: { prompt_tokens: number; completion_tokens: number; total_tokens?: number }, answeredModel?: string): Response {
  const used = usage ?? { prompt_tokens: 10, completion_tokens: 5 };
  return Response.json({
    id: "chatcmpl-fake",
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: answeredModel ?? model,
    choices: [{ index: 0, message, finish_reason }],
    usage: { ...used, total_tokens: used.total_tokens ?? used.prompt_tokens + used.completion_tokens },
  });
}

function errorResponse(status: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ error: { message, type: "fake_error", code: null } }, { status, headers });
}
