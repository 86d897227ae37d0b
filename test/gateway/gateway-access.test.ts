/**
 * Who may drive the gateway: real gateways in front of real meshes, probed the way a hostile
 * page would (foreign Origin on a WebSocket upgrade, a rebound DNS name as Host, cross-site
 * fetch metadata), the allow-lists of the mesh file, the Unix socket, where `?token=` counts,
 * and that actors never see the gateway's token.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { parseMeshFile } from "../../src/supervisor/mesh-file.ts";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";
import { waitFor } from "../helpers.ts";

/** Starting a mesh takes about a second; on a loaded 2-core machine it can take longer than bun's 5 s hook default. */
const START_MS = 30_000;
const MESH = `
mesh:
  name: gw-access
supervisor:
  children:
    - actor: calculator
      module: {ACTORS}/calculator.ts
`;
const EVIL = "https://evil.example";
const SEED = {
  meta: { version: "1.2", msg_type: 1, sender_id: "a1b2c3", receiver_id: "d4e5f6", ttl: 30, trace_id: "access-1" },
  payload: { task_id: "x1y2z3", tool: "calculator", expression: "2+2" },
};
const body = (response: Response): Promise<any> => response.json();

/** The status line and headers (and a short body) of one raw HTTP/1.1 exchange, exactly as sent. */
async function raw(port: number, lines: string[], timeoutMs = 5000): Promise<{ status: number; head: string; body: string }> {
  const socket = connect(port, "127.0.0.1");
  try {
    const done = Promise.withResolvers<{ status: number; head: string; body: string }>();
    const timer = setTimeout(() => done.reject(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
    let data = "";
    socket.on("error", done.reject);
    socket.on("data", (chunk) => {
      data += chunk.toString("latin1");
      const end = data.indexOf("\r\n\r\n");
      if (end === -1) return;
      const head = data.slice(0, end);
      const status = Number(head.split(" ")[1]);
      const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      // A 101 keeps the connection open: its head is the whole answer.
      if (status === 101 || data.length >= end + 4 + length) done.resolve({ status, head, body: data.slice(end + 4, end + 4 + length) });
    });
    socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    try {
      return await done.promise;
    } finally {
      clearTimeout(timer);
    }
  } finally {
    socket.destroy();
  }
}

/** A WebSocket handshake by hand, so the test sees the status code rather than a closed socket. */
function upgrade(port: number, path: string, extra: string[]): Promise<{ status: number; head: string; body: string }> {
  return raw(port, [
    `GET ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, "Upgrade: websocket", "Connection: Upgrade",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13", ...extra,
  ]);
}

/** Sends the seed over a real WebSocket (Bun's client, with the given headers) and returns the answer frame. */
async function askOverWebSocket(url: string, headers: Record<string, string>): Promise<any> {
  const ws = new WebSocket(url, { headers } as any);
  try {
    const answer = Promise.withResolvers<any>();
    ws.onmessage = (event) => answer.resolve(JSON.parse(String(event.data)));
    ws.onerror = () => answer.reject(new Error("the WebSocket failed"));
    ws.onclose = (event) => answer.reject(new Error(`the WebSocket closed (${event.code})`));
    ws.onopen = () => ws.send(JSON.stringify(SEED));
    return await answer.promise;
  } finally {
    ws.close();
  }
}

describe("gateway with the default settings", () => {
  let t: TestMesh;
  let url: string;
  let port: number;
  beforeAll(async () => {
    t = await startTestMesh(MESH, { gateway: { port: 0 } });
    url = t.mesh.gateway!.url;
    port = Number(new URL(url).port);
  }, START_MS);
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  test("a WebSocket upgrade from a foreign Origin is refused (403 code 5, no 101); from its own origin it answers", async () => {
    const refused = await upgrade(port, "/hermes/v1/stream", [`Origin: ${EVIL}`]);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ error_code: 5, auth_method: "origin", origin: EVIL, reason: expect.stringContaining("not served") });
    const own = await upgrade(port, "/hermes/v1/stream", [`Origin: http://127.0.0.1:${port}`]);
    expect(own.status).toBe(101);
    const answer = await askOverWebSocket(`ws://127.0.0.1:${port}/hermes/v1/stream`, { origin: `http://127.0.0.1:${port}` });
    expect(answer.payload.result).toBe(4);
  });

  test("a rebound DNS name as Host is refused on every route, /health included; loopback names with or without port are served", async () => {
    for (const path of ["/actors", "/health", "/metrics", "/api/overview", "/"]) {
      const response = await fetch(`${url}${path}`, { headers: { host: "rebind.evil.example" } });
      expect(response.status).toBe(403);
      expect(await body(response)).toMatchObject({ error_code: 5, auth_method: "host", host: "rebind.evil.example", reason: expect.any(String) });
    }
    const invoke = await fetch(`${url}/hermes/v1/invoke`, { method: "POST", headers: { host: `rebind.evil.example:${port}`, "content-type": "application/json" }, body: JSON.stringify(SEED) });
    expect(invoke.status).toBe(403);
    for (const host of ["localhost", `localhost:${port}`, "127.0.0.1", `127.0.0.1:${port}`, "[::1]", `[::1]:${port}`, "LocalHost."]) {
      const response = await fetch(`${url}/actors`, { headers: { host } });
      expect({ host, status: response.status }).toEqual({ host, status: 200 });
    }
  });

  test("browser requests from another site are refused; same-origin and non-browser ones are served", async () => {
    const crossPost = await fetch(`${url}/hermes/v1/invoke`, { method: "POST", headers: { origin: EVIL, "content-type": "application/json" }, body: JSON.stringify(SEED) });
    expect(crossPost.status).toBe(403);
    expect((await body(crossPost)).auth_method).toBe("origin");
    const crossRead = await fetch(`${url}/actors`, { headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors" } });
    expect(crossRead.status).toBe(403);
    expect(await body(crossRead)).toMatchObject({ error_code: 5, fetch_site: "cross-site" });
    const nullOrigin = await fetch(`${url}/actors`, { headers: { origin: "null" } });
    expect(nullOrigin.status).toBe(403);
    const preflight = await fetch(`${url}/hermes/v1/invoke`, { method: "OPTIONS", headers: { origin: EVIL, "access-control-request-method": "POST" } });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    // A link from another site may open the dashboard page (it holds no data), nothing else.
    const navigation = await fetch(`${url}/`, { headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate" } });
    expect(navigation.status).toBe(200);
    const same = await fetch(`${url}/hermes/v1/invoke`, { method: "POST", headers: { origin: `http://127.0.0.1:${port}`, "sec-fetch-site": "same-origin", "content-type": "application/json" }, body: JSON.stringify(SEED) });
    expect((await body(same)).payload.result).toBe(4);
    expect((await fetch(`${url}/actors`)).status).toBe(200); // curl, scripts: no Origin, no fetch metadata
  });

  test("the Unix socket works whatever Host it is sent, and still refuses foreign origins", async () => {
    const socket = t.mesh.gateway!.socket;
    const viaSocket = (path: string, headers: Record<string, string>, init: RequestInit = {}) => fetch(`http://localhost${path}`, { unix: socket, headers, ...init } as RequestInit);
    expect((await body(await viaSocket("/health", {}))).status).toBe("ok");
    expect((await viaSocket("/actors", { host: "gateway" })).status).toBe(200);
    const answer = await viaSocket("/hermes/v1/invoke", { "content-type": "application/hermes+json" }, { method: "POST", body: JSON.stringify(SEED) });
    expect((await body(answer)).payload.result).toBe(4);
    expect((await viaSocket("/actors", { origin: EVIL })).status).toBe(403);
  });
});

describe("gateway allow-lists from the mesh file, bound beyond loopback without a token", () => {
  let t: TestMesh;
  let port: number;
  let local: string;
  beforeAll(async () => {
    const yaml = `${MESH}gateway:\n  allowed_hosts: [gw.example.com, "*.internal.example"]\n  allowed_origins: ["https://ops.example.com"]\n`;
    t = await startTestMesh(yaml, { gateway: { port: 0, host: "0.0.0.0" } });
    port = Number(new URL(t.mesh.gateway!.url).port);
    local = `http://127.0.0.1:${port}`;
  }, START_MS);
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  test("warns at start that it listens beyond this machine without a token", async () => {
    await waitFor(() => t.output.some((l) => l.startsWith("[gateway]") && l.includes("without a token")), "the gateway's warning");
    expect(t.output.find((l) => l.includes("without a token"))).toContain('"level":"warn"');
  });

  test("allowed hosts (exact and wildcard) and the bound address are served; others are not", async () => {
    for (const host of ["gw.example.com", `gw.example.com:${port}`, "a.internal.example", "b.c.internal.example:80", `0.0.0.0:${port}`, "localhost"]) {
      expect({ host, status: (await fetch(`${local}/actors`, { headers: { host } })).status }).toEqual({ host, status: 200 });
    }
    for (const host of ["rebind.evil.example", "internal.example.evil.example", "example.com"]) {
      expect({ host, status: (await fetch(`${local}/actors`, { headers: { host } })).status }).toEqual({ host, status: 403 });
    }
  });

  test("an allowed origin gets its WebSocket and CORS answers; other origins are still refused", async () => {
    const upgraded = await upgrade(port, "/hermes/v1/stream", ["Origin: https://ops.example.com"]);
    expect(upgraded.status).toBe(101);
    const answer = await askOverWebSocket(`ws://127.0.0.1:${port}/hermes/v1/stream`, { origin: "https://ops.example.com" });
    expect(answer.payload.result).toBe(4);
    const read = await fetch(`${local}/actors`, { headers: { origin: "https://ops.example.com", "sec-fetch-site": "cross-site" } });
    expect(read.status).toBe(200);
    expect(read.headers.get("access-control-allow-origin")).toBe("https://ops.example.com");
    const preflight = await fetch(`${local}/hermes/v1/invoke`, { method: "OPTIONS", headers: { origin: "https://ops.example.com", "access-control-request-method": "POST", "access-control-request-headers": "content-type" } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-headers")).toContain("content-type");
    // An MCP client's per-tool headers are allowed by name; nothing else it asks for is.
    const mcp = await fetch(`${local}/mcp`, { method: "OPTIONS", headers: { origin: "https://ops.example.com", "access-control-request-method": "POST", "access-control-request-headers": "mcp-method, Mcp-Param-Region, x-evil" } });
    expect(mcp.status).toBe(204);
    const allowed = mcp.headers.get("access-control-allow-headers")!.split(", ");
    expect(allowed).toEqual(expect.arrayContaining(["mcp-method", "mcp-param-region", "a2a-version"]));
    expect(allowed).not.toContain("x-evil");
    expect((await upgrade(port, "/hermes/v1/stream", ["Origin: https://ops.example.com.evil.example"])).status).toBe(403);
    expect((await fetch(`${local}/actors`, { headers: { origin: "http://ops.example.com" } })).status).toBe(403); // the scheme is part of an origin
  });

  // The invoke route is answered before hono (src/gateway/invoke-route.ts): the same policy and the same CORS answer as every other route.
  test("an invoke from an allowed origin is answered with its CORS headers; from another origin, site or Host it is refused", async () => {
    const invoke = (headers: Record<string, string>, path = "/hermes/v1/invoke") =>
      fetch(`${local}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(SEED) });
    const allowed = await invoke({ origin: "https://ops.example.com", "sec-fetch-site": "cross-site" });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://ops.example.com");
    expect(allowed.headers.get("vary")).toBe("Origin");
    expect((await body(allowed)).payload.result).toBe(4);
    const own = await invoke({ origin: local });
    expect(own.status).toBe(200);
    expect(own.headers.get("access-control-allow-origin")).toBeNull();
    expect((await body(await invoke({ host: "gw.example.com" }))).payload.result).toBe(4);
    expect((await body(await invoke({}, "/hermes/v1/invoke?trace=1"))).payload.result).toBe(4);
    expect((await body(await invoke({}, "/hermes/v1/%69nvoke"))).payload.result).toBe(4); // hono decodes paths, and so does the route
    for (const headers of [{ origin: "https://ops.example.com.evil.example" }, { "sec-fetch-site": "cross-site" }, { host: "rebind.evil.example" }] as Record<string, string>[]) {
      const refused = await invoke(headers);
      expect({ headers, status: refused.status }).toEqual({ headers, status: 403 });
      expect(await body(refused)).toMatchObject({ error_code: 5 });
      expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    }
    // Only the exact path and POST: anything else is hono's 404, code 8.
    const slash = await invoke({}, "/hermes/v1/invoke/");
    expect(slash.status).toBe(404);
    expect(await body(slash)).toMatchObject({ error_code: 8 });
    expect((await fetch(`${local}/hermes/v1/invoke`)).status).toBe(404);
  });

  test("the mesh file refuses allow-list entries that are not hosts or origins, with their location", () => {
    const bad = `${MESH}gateway:\n  allowed_origins: ["https://ops.example.com/dashboard"]\n  allowed_hosts: ["gw.example.com:8000"]\n`;
    expect(() => parseMeshFile(bad.replaceAll("{ACTORS}", "/nonexistent"), "/srv/mesh.yaml")).toThrow(/gateway\.allowed_origins\[0\]: expected an origin[\s\S]*gateway\.allowed_hosts\[0\]: expected a host name/);
  });
});

describe("gateway with a bearer token", () => {
  const TOKEN = "access-s3cret";
  let t: TestMesh;
  let url: string;
  beforeAll(async () => {
    // The supervisor's own environment carries the token, as under `HERMES_GATEWAY_TOKEN=... hermes-mesh up`.
    const saved = { direct: process.env.HERMES_GATEWAY_TOKEN, named: process.env.HM_ACCESS_TEST_TOKEN };
    process.env.HERMES_GATEWAY_TOKEN = TOKEN;
    process.env.HM_ACCESS_TEST_TOKEN = TOKEN;
    try {
      t = await startTestMesh(`${MESH}gateway:\n  token_env: HM_ACCESS_TEST_TOKEN\n  allowed_origins: ["https://ops.example.com"]\n`, { gateway: { port: 0, token: TOKEN } });
    } finally {
      for (const [name, value] of [["HERMES_GATEWAY_TOKEN", saved.direct], ["HM_ACCESS_TEST_TOKEN", saved.named]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    url = t.mesh.gateway!.url;
  }, START_MS);
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  test("?token= is refused on invoke and the API, accepted on the WebSocket; the dashboard page needs none", async () => {
    const post = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(SEED) });
    const query = await post(`/hermes/v1/invoke?token=${TOKEN}`);
    expect(query.status).toBe(401);
    expect(await body(query)).toMatchObject({ error_code: 5, auth_method: "bearer", reason: expect.stringContaining("WebSocket") });
    expect((await body(await post("/hermes/v1/invoke", { authorization: `Bearer ${TOKEN}` }))).payload.result).toBe(4);
    expect((await fetch(`${url}/api/overview?token=${TOKEN}`)).status).toBe(401);
    expect((await fetch(`${url}/api/overview`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await fetch(`${url}/`)).status).toBe(200);
    const port = Number(new URL(url).port);
    expect((await upgrade(port, "/hermes/v1/stream", [])).status).toBe(401);
    expect((await upgrade(port, "/hermes/v1/stream", [])).body).toContain('"error_code":5');
    expect((await upgrade(port, "/hermes/v1/stream?token=wrong", [])).status).toBe(401);
    const answer = await askOverWebSocket(`ws://127.0.0.1:${port}/hermes/v1/stream?token=${TOKEN}`, {});
    expect(answer.payload.result).toBe(4);
  });

  test("an allowed origin can read every invoke answer, a 401 included: each carries its CORS headers", async () => {
    const post = (headers: Record<string, string>, body = JSON.stringify(SEED)) =>
      fetch(`${url}/hermes/v1/invoke`, { method: "POST", headers: { "content-type": "application/json", origin: "https://ops.example.com", ...headers }, body });
    const cases: Array<[string, Promise<Response>, number]> = [
      ["no token", post({}), 401],
      ["wrong token", post({ authorization: "Bearer wrong" }), 401],
      ["answered", post({ authorization: `Bearer ${TOKEN}` }), 200],
      ["content type", post({ authorization: `Bearer ${TOKEN}`, "content-type": "text/plain" }), 415],
      ["bad JSON", post({ authorization: `Bearer ${TOKEN}` }, "{nope"), 400],
      ["too big", post({ authorization: `Bearer ${TOKEN}` }, JSON.stringify({ pad: "x".repeat(1024 * 1024 + 1) })), 413],
    ];
    for (const [name, pending, status] of cases) {
      const answer = await pending;
      expect({ name, status: answer.status, origin: answer.headers.get("access-control-allow-origin") }).toEqual({ name, status, origin: "https://ops.example.com" });
      if (status === 401) expect(await body(answer)).toMatchObject({ error_code: 5, auth_method: "bearer" });
      else await answer.arrayBuffer();
    }
  });

  test("every invoke is counted on /metrics: refusals under the access check, answers under the route", async () => {
    const counted = async (route: string, status: number) => {
      const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      return Number(new RegExp(`hermes_gateway_requests_total\\{route="${route.replace(/[*]/g, "\\*")}",status="${status}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };
    const before = { refused: await counted("/*", 401), answered: await counted("/hermes/v1/invoke", 200), unsupported: await counted("/hermes/v1/invoke", 415) };
    const post = (headers: Record<string, string>) => fetch(`${url}/hermes/v1/invoke`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(SEED) });
    for (let i = 0; i < 3; i++) expect((await post({})).status).toBe(401);
    expect((await post({ authorization: "Bearer wrong" })).status).toBe(401);
    for (let i = 0; i < 2; i++) expect((await post({ authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    expect((await post({ authorization: `Bearer ${TOKEN}`, "content-type": "text/plain" })).status).toBe(415);
    expect(await counted("/*", 401)).toBe(before.refused + 4);
    expect(await counted("/hermes/v1/invoke", 200)).toBe(before.answered + 2);
    expect(await counted("/hermes/v1/invoke", 415)).toBe(before.unsupported + 1);
  });

  test("actors do not inherit the gateway's token; only the gateway has it", () => {
    const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    const actor = environ(t.pid("calculator"));
    expect(actor.some((v) => v.startsWith("HERMES_SCHEDULER="))).toBe(true); // it is the actor's real environment
    expect(actor.filter((v) => v.startsWith("HERMES_GATEWAY_TOKEN=") || v.startsWith("HM_ACCESS_TEST_TOKEN=") || v.includes(TOKEN))).toEqual([]);
    expect(environ(t.pid("gateway"))).toContain(`HERMES_GATEWAY_TOKEN=${TOKEN}`);
  });
});
