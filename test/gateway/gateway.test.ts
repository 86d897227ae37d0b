/** The gateway over real HTTP, a real Unix socket and a real WebSocket, in front of a real mesh. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { LogEvent } from "../../src/observability/event-log.ts";
import { readEvents } from "../../src/observability/event-log-reader.ts";
import { readTrace } from "../../src/observability/trace-tree.ts";
import { newMessageId } from "../../mesh/ids.ts";
import { chunkedBody, waitFor } from "../helpers.ts";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";

const MESH = `
mesh:
  name: gw
supervisor:
  intensity: 5
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
    - actor: calculator
      module: {ACTORS}/calculator.ts
`;
/** A response body as JSON, untyped: the assertions say what it must hold. */
const body = (response: Response): Promise<any> => response.json();

const SEED = {
  meta: { version: "1.2", msg_type: 1, sender_id: "a1b2c3", receiver_id: "d4e5f6", ttl: 300, trace_id: "t7u8v9" },
  payload: { task_id: "x1y2z3", tool: "calculator", expression: "2+2" },
};

describe("gateway", () => {
  let t: TestMesh;
  let url: string;
  const invoke = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}/hermes/v1/invoke`, { method: "POST", headers: { "content-type": "application/hermes+json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });

  beforeAll(async () => {
    t = await startTestMesh(MESH, { gateway: { port: 0 } });
    url = t.mesh.gateway!.url;
  });
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  test("the seed's own example answers msg_type 2, trace t7u8v9, result 4, sender and receiver swapped", async () => {
    const response = await invoke(SEED);
    expect(response.status).toBe(200);
    expect(await body(response)).toEqual({
      meta: { version: "1.2", msg_type: 2, sender_id: "d4e5f6", receiver_id: "a1b2c3", ttl: 300, trace_id: "t7u8v9" },
      payload: { task_id: "x1y2z3", result: 4, expression: "2+2" },
    });
  });

  test("a native envelope gets a native answer; an event is accepted", async () => {
    const id = newMessageId();
    const request = {
      message_id: id, message_type: "request", trace_id: "native-1", source_agent: "http-client", target_agent: "echo",
      reply_to: "http-client", timestamp: Date.now(), ttl: 5000, payload: { text: "你好 🌍" },
    };
    const answer = (await body(await invoke(request, { "content-type": "application/json" })));
    expect(answer).toMatchObject({ message_type: "response", correlation_id: id, trace_id: "native-1", target_agent: "http-client", payload: { text: "你好 🌍" } });
    const event = { ...request, message_id: newMessageId(), message_type: "event" };
    delete (event as Record<string, unknown>).reply_to;
    expect((await body(await invoke(event)))).toMatchObject({ accepted: true, delivered_to: 1 });
  });

  test("a poison payload (nested 20,000 deep) is refused at once with 400 code 2; then more than a credit window of requests to the same actor are all answered", async () => {
    const nested = (depth: number) => "{\"a\":".repeat(depth - 1) + "{}" + "}".repeat(depth - 1);
    const meta = { ...SEED.meta, receiver_id: "echo" };
    const t0 = performance.now();
    const poison = await invoke(`{"meta":${JSON.stringify(meta)},"payload":{"v":${nested(20_000)}}}`);
    const refusedMs = performance.now() - t0;
    expect(poison.status).toBe(400);
    expect((await body(poison)).payload).toMatchObject({ error_code: 2, reason: expect.stringContaining("nests deeper than 512 levels") });
    console.log(`gateway: poison payload (20,000 levels) refused in ${refusedMs.toFixed(1)} ms`);
    expect(refusedMs).toBeLessThan(1000);
    const native = await invoke(`{"message_id":"${newMessageId()}","message_type":"request","trace_id":"deep","source_agent":"h","target_agent":"echo","reply_to":"h","timestamp":${Date.now()},"ttl":5000,"payload":${nested(513)}}`);
    expect(native.status).toBe(400);
    expect((await invoke(`{"meta":${JSON.stringify(meta)},"payload":${nested(512)}}`)).status).toBe(200);
    let answered = 0;
    for (let batch = 0; batch < 70; batch++) {
      const replies = await Promise.all(Array.from({ length: 64 }, async (_, i) => (await body(await invoke({ meta, payload: { n: batch * 64 + i } }))).payload));
      answered += replies.filter((p, i) => p.n === batch * 64 + i).length;
    }
    expect(answered).toBe(70 * 64);
  });

  test("bad input gets coded answers: 400 code 2, 415, 413 code 6, and routed errors are 200", async () => {
    const badMeta = await invoke({ ...SEED, meta: { ...SEED.meta, version: "1.3" } });
    expect(badMeta.status).toBe(400);
    expect((await body(badMeta)).payload).toMatchObject({ error_code: 2, reason: expect.stringContaining("version") });
    const badJson = await invoke("{not json");
    expect(badJson.status).toBe(400);
    expect((await body(badJson)).error_code).toBe(2);
    const wrongType = await invoke(SEED, { "content-type": "text/plain" });
    expect(wrongType.status).toBe(415);
    const big = await invoke(JSON.stringify({ ...SEED, payload: { pad: "x".repeat(2 * 1024 * 1024) } }));
    expect(big.status).toBe(413);
    expect((await body(big)).error_code).toBe(6);
    // Without a Content-Length (a chunked body), the bytes are counted as they come.
    const chunked = (text: string) => fetch(`${url}/hermes/v1/invoke`, { method: "POST", headers: { "content-type": "application/json" }, body: chunkedBody(text) });
    const bigChunked = await chunked(JSON.stringify({ ...SEED, payload: { pad: "x".repeat(2 * 1024 * 1024) } }));
    expect(bigChunked.status).toBe(413);
    expect((await body(bigChunked)).error_code).toBe(6);
    const smallChunked = await chunked(JSON.stringify(SEED));
    expect((await body(smallChunked)).payload.result).toBe(4);
    const nobody = await invoke({ ...SEED, meta: { ...SEED.meta, receiver_id: "nobody" }, payload: { x: 1 } });
    expect(nobody.status).toBe(200);
    expect((await body(nobody)).payload.error_code).toBe(8);
    const divide = await invoke({ ...SEED, payload: { tool: "calculator", expression: "1/0" } });
    expect(divide.status).toBe(200);
    expect((await body(divide)).payload).toMatchObject({ error_code: 2, reason: expect.stringContaining("division by zero") });
  });

  test("garbage never takes the gateway down", async () => {
    const pid = t.mesh.registry.byAddress("gateway")!.pid;
    const bodies = Array.from({ length: 300 }, (_, i) => {
      const pick = i % 6;
      if (pick === 0) return String.fromCharCode(...crypto.getRandomValues(new Uint8Array(64)));
      if (pick === 1) return JSON.stringify([1, 2, i]);
      if (pick === 2) return JSON.stringify({ meta: { msg_type: "x" }, payload: [] });
      if (pick === 3) return JSON.stringify({ message_type: "request", payload: null });
      if (pick === 4) return "null";
      return JSON.stringify({ meta: { ...SEED.meta, ttl: -1 }, payload: {} });
    });
    const statuses = await Promise.all(bodies.map(async (b) => (await invoke(b)).status));
    expect(statuses.every((s) => s === 400)).toBe(true);
    expect((await invoke(SEED)).status).toBe(200);
    expect(t.mesh.registry.byAddress("gateway")!.pid).toBe(pid);
  });

  test("the same app answers on <dir>/gateway.sock", async () => {
    const response = await fetch("http://localhost/hermes/v1/invoke", {
      unix: t.mesh.gateway!.socket,
      method: "POST",
      headers: { "content-type": "application/hermes+json" },
      body: JSON.stringify(SEED),
    } as RequestInit);
    expect((await body(response)).payload.result).toBe(4);
  });

  test("health, actors and Prometheus metrics reflect the mesh", async () => {
    expect((await body(await fetch(`${url}/health`)))).toMatchObject({ status: "ok", mesh: "gw", actors: 2, healthy: 2 });
    const actors = ((await body(await fetch(`${url}/actors`)))) as Array<{ address: string }>;
    expect(actors.map((a) => a.address)).toEqual(expect.arrayContaining(["echo", "calculator", "gateway"]));
    for (let i = 0; i < 5; i++) await invoke(SEED);
    await waitFor(async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      const handled = Number(/hermes_messages_handled_total\{actor="calculator",instance="calculator",type="request"\} (\d+)/.exec(text)?.[1] ?? 0);
      return handled >= 5;
    }, "the calculator's counter to reach /metrics (heartbeats)", 10_000);
    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    const text = await metrics.text();
    for (const family of ["hermes_errors_total", "hermes_handling_seconds_bucket", "hermes_restarts_total", "hermes_queue_depth", "hermes_redeliveries_total", "hermes_dead_letters_total", "hermes_gateway_requests_total"]) {
      expect(text).toContain(family);
    }
  });

  test("the WebSocket stream carries progress and then the result", async () => {
    const ws = new WebSocket(`${url.replace("http", "ws")}/hermes/v1/stream`);
    const frames: any[] = [];
    ws.onmessage = (event) => frames.push(JSON.parse(String(event.data)));
    await new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = reject;
    });
    try {
      ws.send(JSON.stringify({ meta: { ...SEED.meta, receiver_id: "echo", trace_id: "ws-1" }, payload: { progress: 2, text: "hi" } }));
      await waitFor(() => frames.some((f) => f.meta?.msg_type === 2), "the result frame");
      expect(frames.map((f) => f.meta.msg_type)).toEqual([3, 3, 2]);
      expect(frames.slice(0, 2).map((f) => f.payload.step)).toEqual([1, 2]);
      expect(frames[2].payload).toEqual({ progress: 2, text: "hi" });
    } finally {
      ws.close();
    }
  });

  test("a request that fails is logged by the gateway with status error and its code", async () => {
    const answer = await body(await invoke({ ...SEED, meta: { ...SEED.meta, trace_id: "trace-nope" }, payload: { tool: "nope" } }));
    expect(answer.payload).toMatchObject({ error_code: 8 });
    let fields: LogEvent | undefined;
    await waitFor(() => {
      fields = readEvents(join(t.dir, "logs", "gateway.jsonl")).find((e) => e.trace_id === "trace-nope");
      return fields !== undefined;
    }, "the gateway's record", 5000);
    expect(fields).toMatchObject({ event: "handled", type: "request", label: "request → capability:nope", status: "error", error_code: 8 });
    expect(Object.keys(fields!).at(-1)).toBe("error_code");
    expect(fields!.parent_span_id).toBeUndefined();
  });

  test("a W3C traceparent from HTTP becomes the parent of the trace, which `trace` rebuilds across actors", async () => {
    const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    await invoke({ ...SEED, meta: { ...SEED.meta, trace_id: "trace-w3c" } }, { traceparent: parent });
    let roots: ReturnType<typeof readTrace> = [];
    await waitFor(() => {
      roots = readTrace(t.dir, "trace-w3c");
      return roots.length === 1 && roots[0]!.children.length === 1;
    }, "both spans in the event logs", 5000);
    expect(roots[0]).toMatchObject({ actor: "gateway", parent_span_id: "00f067aa0ba902b7", status: "ok" });
    // The gateway's own record, field by field and in the order its JSON line had them.
    const fields = readEvents(join(t.dir, "logs", "gateway.jsonl")).find((e) => e.trace_id === "trace-w3c")! as Record<string, any>;
    expect(Object.keys(fields)).toEqual(["ts", "actor", "event", "type", "label", "trace_id", "span_id", "parent_span_id", "started_at", "duration_ms", "status"]);
    expect(fields).toMatchObject({ actor: "gateway", event: "handled", type: "request", label: "request → capability:calculator", trace_id: "trace-w3c", parent_span_id: "00f067aa0ba902b7", status: "ok" });
    expect(fields.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(fields.duration_ms).toBeGreaterThan(0);
    expect(Math.abs(fields.started_at - Date.now())).toBeLessThan(60_000);
    expect(roots[0]!.children[0]).toMatchObject({ actor: "calculator", type: "request", status: "ok" });
    // The dashboard's trace view serves the same tree over HTTP.
    const view = await body(await fetch(`${url}/api/trace/trace-w3c`));
    expect(view.text).toContain("trace trace-w3c: 2 span(s) in 2 actor(s)");
    expect(view.text).toContain("calculator  request");
  });
});

describe("gateway with a bearer token", () => {
  test("missing or wrong tokens get 401 with code 5; the right one passes; /health stays open", async () => {
    await using t = await startTestMesh(MESH, { gateway: { port: 0, token: "s3cret-token" } });
    const url = t.mesh.gateway!.url;
    const post = (headers: Record<string, string>) =>
      fetch(`${url}/hermes/v1/invoke`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(SEED) });
    for (const headers of [{}, { authorization: "Bearer nope" }] as Array<Record<string, string>>) {
      const refused = await post(headers);
      expect(refused.status).toBe(401);
      expect(await body(refused)).toMatchObject({ error_code: 5, auth_method: "bearer" });
    }
    const ok = await post({ authorization: "Bearer s3cret-token" });
    expect((await body(ok)).payload.result).toBe(4);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    // ?token= is for browsers' WebSockets only (test/gateway/gateway-access.test.ts); scrapers send the header.
    expect((await fetch(`${url}/metrics?token=s3cret-token`)).status).toBe(401);
    expect((await fetch(`${url}/metrics`, { headers: { authorization: "Bearer s3cret-token" } })).status).toBe(200);
  });
});
