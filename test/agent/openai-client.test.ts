/** The OpenAI-compatible client over real HTTP against the fake server: wire format, retries, errors, circuit, usage. */
import { describe, expect, test } from "bun:test";
import type { ChatMessage, ChatRequest, ToolSpec } from "../../src/agent/chat-types.ts";
import { CircuitBreaker } from "../../src/agent/circuit-breaker.ts";
import { OpenAICompatibleModel, parseRetryAfter, type OpenAICompatibleOptions } from "../../src/agent/openai-client.ts";
import { UsageLedger } from "../../src/agent/usage-ledger.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { startFakeOpenAI, type FakeOpenAIServer } from "./fake-openai-server.ts";

const KEY = "sk-test-0123456789abcdef";
const ask = (content: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({ model: "gpt-test", messages: [{ role: "user", content }], ...extra });

/** A client of the fake server whose waits between attempts are recorded, not waited. */
function clientOf(server: FakeOpenAIServer, options: OpenAICompatibleOptions = {}) {
  const delays: number[] = [];
  const model = new OpenAICompatibleModel({
    baseUrl: server.url,
    apiKey: KEY,
    env: {},
    sleep: async (ms) => void delays.push(ms),
    ...options,
  });
  return { model, delays };
}

/** The HermesError a promise rejects with (fails the test if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<HermesError> {
  const error = await promise.then(
    (value) => new Error(`expected a rejection, got ${JSON.stringify(value)}`),
    (error: unknown) => error,
  );
  if (!(error instanceof HermesError)) throw error;
  return error;
}

describe("wire format", () => {
  test("a text reply: the request as OpenAI expects it, the answer parsed", async () => {
    await using server = startFakeOpenAI();
    server.push({ kind: "text", content: "Hello!", usage: { prompt_tokens: 12, completion_tokens: 3 }, model: "gpt-test-2024" });
    const { model } = clientOf(server);
    const response = await model.complete(ask("Hi", { temperature: 0.2, max_tokens: 50 }));
    expect(response).toEqual({
      message: { role: "assistant", content: "Hello!" },
      model: "gpt-test-2024",
      finish_reason: "stop",
      usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
    });
    const [sent] = server.requests;
    expect(sent.method).toBe("POST");
    expect(sent.path).toBe("/v1/chat/completions");
    expect(sent.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(sent.headers["content-type"]).toBe("application/json");
    expect(sent.body).toEqual({ model: "gpt-test", messages: [{ role: "user", content: "Hi" }], temperature: 0.2, max_tokens: 50 });
  });

  test("tool calls round trip: tool specs out, calls in (arguments kept as text), results back with tool_call_id", async () => {
    await using server = startFakeOpenAI();
    server.push(
      { kind: "tool_calls", calls: [{ id: "call_1", name: "calculator", arguments: '{"expression":"6*7"}' }, { id: "call_2", name: "calculator", arguments: "{not json" }] },
      { kind: "text", content: "42" },
    );
    const { model } = clientOf(server);
    const tools: ToolSpec[] = [{ name: "calculator", description: "Evaluates arithmetic", parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] } }];
    const messages: ChatMessage[] = [{ role: "system", content: "Be brief." }, { role: "user", content: "6*7?" }];
    const first = await model.complete({ model: "gpt-test", messages, tools });
    expect(first.finish_reason).toBe("tool_calls");
    expect(first.message).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_1", name: "calculator", arguments: '{"expression":"6*7"}' }, { id: "call_2", name: "calculator", arguments: "{not json" }],
    });
    messages.push(first.message, { role: "tool", tool_call_id: "call_1", name: "calculator", content: '{"ok":true,"result":42}' }, { role: "tool", tool_call_id: "call_2", name: "calculator", content: '{"ok":false}' });
    const second = await model.complete({ model: "gpt-test", messages, tools });
    expect(second.message.content).toBe("42");

    expect(server.requests[0].body.tools).toEqual([{ type: "function", function: tools[0] }]);
    expect(server.requests[1].body.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "6*7?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "calculator", arguments: '{"expression":"6*7"}' } },
          { id: "call_2", type: "function", function: { name: "calculator", arguments: "{not json" } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: '{"ok":true,"result":42}' },
      { role: "tool", tool_call_id: "call_2", content: '{"ok":false}' },
    ]);
  });

  test("base URL and key default to OPENAI_BASE_URL and OPENAI_API_KEY; no key, no Authorization header", async () => {
    await using server = startFakeOpenAI();
    server.push({ kind: "text", content: "a" }, { kind: "text", content: "b" });
    await new OpenAICompatibleModel({ env: { OPENAI_BASE_URL: `${server.url}/`, OPENAI_API_KEY: "env-key" } }).complete(ask("x"));
    await new OpenAICompatibleModel({ env: { OPENAI_BASE_URL: server.url } }).complete(ask("y"));
    expect(server.requests.map((r) => r.path)).toEqual(["/v1/chat/completions", "/v1/chat/completions"]);
    expect(server.requests[0].headers.authorization).toBe("Bearer env-key");
    expect(server.requests[1].headers.authorization).toBeUndefined();
  });
});

describe("retries", () => {
  test("429 then success, waiting what Retry-After says (seconds, HTTP date), capped", async () => {
    await using server = startFakeOpenAI();
    const inThreeSeconds = new Date(Date.now() + 3000).toUTCString();
    server.push({ kind: "rate_limited", retryAfter: "2" }, { kind: "rate_limited", retryAfter: inThreeSeconds }, { kind: "text", content: "ok" });
    const { model, delays } = clientOf(server, { maxAttempts: 3 });
    expect((await model.complete(ask("x"))).message.content).toBe("ok");
    expect(server.requests).toHaveLength(3);
    expect(delays[0]).toBe(2000);
    expect(delays[1]).toBeGreaterThan(1000); // HTTP dates have whole seconds
    expect(delays[1]).toBeLessThanOrEqual(3000);

    server.push({ kind: "rate_limited", retryAfter: "3600" }, { kind: "text", content: "ok" });
    const capped = clientOf(server, { maxRetryAfterMs: 5000 });
    await capped.model.complete(ask("x"));
    expect(capped.delays).toEqual([5000]);
  });

  test("a real wait: Retry-After 0 retries at once", async () => {
    await using server = startFakeOpenAI();
    server.push({ kind: "rate_limited", retryAfter: "0" }, { kind: "text", content: "ok" });
    const model = new OpenAICompatibleModel({ baseUrl: server.url, apiKey: KEY });
    expect((await model.complete(ask("x"))).message.content).toBe("ok");
    expect(server.requests).toHaveLength(2);
  });

  test("5xx then success, with exponential backoff and jitter between attempts", async () => {
    await using server = startFakeOpenAI();
    server.push({ kind: "error", status: 502, message: "bad gateway" }, { kind: "error", status: 503, message: "overloaded" }, { kind: "text", content: "ok" });
    const { model, delays } = clientOf(server, { backoff: { initialMs: 100, maxMs: 1000, jitter: 0.2 } });
    expect((await model.complete(ask("x"))).message.content).toBe("ok");
    expect(delays).toHaveLength(2);
    expect(delays[0]).toBeWithin(80, 121);
    expect(delays[1]).toBeWithin(160, 241);
  });

  test("still rate limited after the last attempt: code 11 with the server's retry_after_ms", async () => {
    await using server = startFakeOpenAI();
    server.push(...Array(3).fill({ kind: "rate_limited", retryAfter: "7" }));
    const error = await rejection(clientOf(server).model.complete(ask("x")));
    expect(error.code).toBe(ErrorCode.RATE_LIMIT_EXCEEDED);
    expect(error.fields).toMatchObject({ status: 429, attempts: 3, retry_after_ms: 7000 });
    expect(server.requests).toHaveLength(3);
  });

  test("5xx after the last attempt: code 10 with the status and a retry_after_ms", async () => {
    await using server = startFakeOpenAI();
    server.push(...Array(2).fill({ kind: "error", status: 500, message: "boom" }));
    const error = await rejection(clientOf(server, { maxAttempts: 2 }).model.complete(ask("x")));
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.message).toContain("HTTP 500: boom");
    expect(error.fields).toMatchObject({ status: 500, attempts: 2 });
    expect(error.fields.retry_after_ms).toBeNumber();
    expect(server.requests).toHaveLength(2);
  });

  test("network errors are retried, then code 10", async () => {
    const server = startFakeOpenAI();
    await server.stop(); // nothing listens on its port any more
    const { model, delays } = clientOf(server);
    const error = await rejection(model.complete(ask("x")));
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.fields).toMatchObject({ reason: "network error", attempts: 3 });
    expect(delays).toHaveLength(2);
  });

  test("no retry that would end past the deadline: the server's answer is reported instead", async () => {
    await using server = startFakeOpenAI();
    server.push({ kind: "rate_limited", retryAfter: "20" });
    const error = await rejection(clientOf(server, { timeoutMs: 10_000 }).model.complete(ask("x")));
    expect(error.code).toBe(ErrorCode.RATE_LIMIT_EXCEEDED);
    expect(error.fields).toMatchObject({ attempts: 1, retry_after_ms: 20_000 });
  });
});

describe("errors that are not retried", () => {
  const cases: Array<[number, ErrorCode, Record<string, unknown>]> = [
    [400, ErrorCode.INVALID_REQUEST, { status: 400, reason: "'messages' is too long" }],
    [422, ErrorCode.INVALID_REQUEST, { status: 422 }],
    [401, ErrorCode.AUTH_FAILED, { status: 401, auth_method: "bearer" }],
    [403, ErrorCode.AUTH_FAILED, { status: 403 }],
    [404, ErrorCode.UNROUTABLE, { status: 404, target: "gpt-test" }],
  ];
  for (const [status, code, fields] of cases) {
    test(`HTTP ${status} → code ${code}, one request, the server's message kept`, async () => {
      await using server = startFakeOpenAI();
      server.push({ kind: "error", status, message: "'messages' is too long" });
      const error = await rejection(clientOf(server).model.complete(ask("x")));
      expect(error.code).toBe(code);
      expect(error.message).toContain("'messages' is too long");
      expect(error.fields).toMatchObject(fields);
      expect(server.requests).toHaveLength(1);
    });
  }

  test("the API key never appears in an error, even when the server echoes it", async () => {
    await using server = startFakeOpenAI();
    server.push({ kind: "error", status: 401, message: `Incorrect API key provided: ${KEY}` });
    const error = await rejection(clientOf(server).model.complete(ask("x")));
    expect(error.code).toBe(ErrorCode.AUTH_FAILED);
    expect(JSON.stringify({ message: error.message, payload: error.toPayload() })).not.toContain(KEY);
    expect(error.message).toContain("[redacted]");
  });

  test("a 200 that is not JSON → code 7, not retried", async () => {
    await using server = startFakeOpenAI();
    server.push({ kind: "malformed" }, { kind: "malformed", body: '{"choices":[]}' });
    const { model } = clientOf(server);
    const notJson = await rejection(model.complete(ask("x")));
    expect(notJson.code).toBe(ErrorCode.INTERNAL);
    expect(notJson.message).toContain("not JSON");
    const noChoice = await rejection(model.complete(ask("x")));
    expect(noChoice.code).toBe(ErrorCode.INTERNAL);
    expect(noChoice.message).toContain("choices");
    expect(server.requests).toHaveLength(2);
  });
});

describe("deadlines", () => {
  test("a slow server → code 3 with timeout_ms, as soon as the deadline passes", async () => {
    await using server = startFakeOpenAI();
    server.push({ kind: "slow" });
    const startedAt = performance.now();
    const error = await rejection(clientOf(server, { timeoutMs: 100 }).model.complete(ask("x")));
    expect(error.code).toBe(ErrorCode.TASK_TIMEOUT);
    expect(error.fields).toMatchObject({ timeout_ms: 100, attempts: 1 });
    expect(performance.now() - startedAt).toBeLessThan(5000); // the slow reply would hold for 10 s
    expect(server.requests).toHaveLength(1); // a timeout is not retried past the deadline
  });

  test("the caller's signal cancels the call: code 3, or the caller's own HermesError", async () => {
    await using server = startFakeOpenAI();
    server.push({ kind: "slow" }, { kind: "slow" });
    const { model } = clientOf(server);
    const controller = new AbortController();
    const pending = model.complete(ask("x", { signal: controller.signal }));
    await server.waitForRequests(1);
    controller.abort();
    expect(await rejection(pending)).toMatchObject({ code: ErrorCode.TASK_TIMEOUT, fields: { reason: "cancelled" } });

    const ttl = new AbortController();
    const second = model.complete(ask("x", { signal: ttl.signal }));
    await server.waitForRequests(2);
    ttl.abort(new HermesError(ErrorCode.TTL_EXPIRED, "ttl ran out"));
    expect((await rejection(second)).code).toBe(ErrorCode.TTL_EXPIRED);
    expect(model.breaker.consecutiveFailures).toBe(0); // a cancel says nothing about the endpoint
  });
});

describe("circuit breaker", () => {
  test("opens after N failures, rejects without a request, half-opens after the cool-down", async () => {
    await using server = startFakeOpenAI();
    let now = 1_000_000;
    const { model } = clientOf(server, { maxAttempts: 1, breaker: { failureThreshold: 3, coolDownMs: 30_000, now: () => now } });
    server.push(...Array(3).fill({ kind: "error", status: 500, message: "down" }));
    for (let i = 0; i < 3; i++) expect((await rejection(model.complete(ask("x")))).fields.status).toBe(500);
    expect(model.breaker.state).toBe("open");

    now += 10_000;
    const fast = await rejection(model.complete(ask("x")));
    expect(fast.code).toBe(ErrorCode.UNAVAILABLE);
    expect(fast.fields).toMatchObject({ reason: "circuit open", retry_after_ms: 20_000 });
    expect(server.requests).toHaveLength(3); // rejected without touching the server

    now += 20_000;
    expect(model.breaker.state).toBe("half-open");
    server.push({ kind: "error", status: 503, message: "still down" });
    expect((await rejection(model.complete(ask("trial 1")))).fields.status).toBe(503);
    expect(model.breaker.state).toBe("open"); // the trial failed: a fresh cool-down

    now += 30_000;
    server.push({ kind: "text", content: "back" });
    expect((await model.complete(ask("trial 2"))).message.content).toBe("back");
    expect(model.breaker.state).toBe("closed");
    expect(server.requests).toHaveLength(5);
  });

  test("429s and 4xx do not open it; a shared breaker counts across clients", async () => {
    await using server = startFakeOpenAI();
    const breaker = new CircuitBreaker({ failureThreshold: 2 });
    const a = clientOf(server, { maxAttempts: 1, breaker }).model;
    const b = clientOf(server, { maxAttempts: 1, breaker }).model;
    server.push({ kind: "rate_limited" }, { kind: "error", status: 400, message: "bad" }, { kind: "rate_limited" });
    for (const model of [a, b, a]) await rejection(model.complete(ask("x")));
    expect(breaker.state).toBe("closed");
    server.push({ kind: "error", status: 500, message: "x" }, { kind: "error", status: 500, message: "x" });
    await rejection(a.complete(ask("x")));
    await rejection(b.complete(ask("x")));
    expect(breaker.state).toBe("open");
    expect((await rejection(a.complete(ask("x")))).fields.reason).toBe("circuit open");
  });
});

test("usage is summed per trace in the ledger, priced under the requested model", async () => {
  await using server = startFakeOpenAI();
  const ledger = new UsageLedger({ prices: { "gpt-test": { prompt_per_1k: 1, completion_per_1k: 2 } } });
  const { model } = clientOf(server, { ledger });
  server.push(
    { kind: "text", content: "a", usage: { prompt_tokens: 1000, completion_tokens: 500 }, model: "gpt-test-2024" },
    { kind: "text", content: "b", usage: { prompt_tokens: 200, completion_tokens: 100 } },
    { kind: "text", content: "c", usage: { prompt_tokens: 7, completion_tokens: 3 } },
    { kind: "text", content: "d" },
  );
  await model.complete(ask("1", { trace_id: "t1" }));
  await model.complete(ask("2", { trace_id: "t1" }));
  await model.complete(ask("3", { trace_id: "t2", model: "unpriced" }));
  await model.complete(ask("4")); // no trace: not recorded
  expect(ledger.totals("t1")).toEqual({ prompt_tokens: 1200, completion_tokens: 600, total_tokens: 1800, cost_usd: 2.4, calls: 2, unpriced_calls: 0 });
  expect(ledger.totals("t2")).toMatchObject({ total_tokens: 10, cost_usd: 0, calls: 1, unpriced_calls: 1 });
  expect(ledger.size).toBe(2);
});

test("parseRetryAfter reads retry-after-ms, seconds and HTTP dates, and ignores garbage", () => {
  const now = Date.parse("2025-01-01T00:00:00Z");
  expect(parseRetryAfter(new Headers({ "retry-after-ms": "250", "retry-after": "9" }), now)).toBe(250);
  expect(parseRetryAfter(new Headers({ "retry-after": "1.5" }), now)).toBe(1500);
  expect(parseRetryAfter(new Headers({ "retry-after": "Wed, 01 Jan 2025 00:00:04 GMT" }), now)).toBe(4000);
  expect(parseRetryAfter(new Headers({ "retry-after": "Tue, 31 Dec 2024 00:00:00 GMT" }), now)).toBe(0);
  expect(parseRetryAfter(new Headers({ "retry-after": "soon" }), now)).toBeUndefined();
  expect(parseRetryAfter(new Headers(), now)).toBeUndefined();
});
