/**
 * A few seconds of concurrent keep-alive load on the gateway from a second process: every answer
 * must arrive, be HTTP 200 and be the right one (result 4, its own trace id: no crossed answers).
 * Checks correctness under load, never speed (bench/gateway-load.ts measures that); and the
 * scenario's bare forwarder baseline answers each request with its own result.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { spawnFixture } from "../../bench/lib/child.ts";
import { SEED_REQUEST, seedAnswerProblem } from "../../bench/lib/invoke-seed.ts";
import { UNPINNED } from "../../bench/lib/placement.ts";
import { isAlive, spawnBun, waitFor } from "../helpers.ts";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";

const LOAD_FIXTURE = join(import.meta.dir, "../../bench/fixtures/http-load-fixture.ts");
const MESH = `
mesh:
  name: gw-load
supervisor:
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
    - actor: calculator
      module: {ACTORS}/calculator.ts
`;

interface LoadReport {
  requests: number;
  ok: number;
  non2xx: number;
  wrong: number;
  errors: number;
  problems: string[];
}

async function load(url: string, seconds: number, workers: number, token?: string): Promise<LoadReport> {
  await using child = spawnBun(LOAD_FIXTURE, ["--url", url, "--seconds", String(seconds), "--workers", String(workers), ...(token ? ["--token", token] : [])]);
  const line = await child.waitForLine(/^result /, (seconds + 10) * 1000);
  return JSON.parse(line.slice("result ".length));
}

describe("gateway under concurrent keep-alive load from another process", () => {
  let t: TestMesh;
  beforeAll(async () => {
    t = await startTestMesh(MESH, { gateway: { port: 0, token: "load-token" } });
  });
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  test("2 s of 8 concurrent fetch loops: every answer is HTTP 200 with result 4 and its own trace id", async () => {
    const gatewayPid = t.pid("gateway");
    const report = await load(t.mesh.gateway!.url, 2, 8, "load-token");
    expect(report.problems).toEqual([]);
    expect({ non2xx: report.non2xx, wrong: report.wrong, errors: report.errors }).toEqual({ non2xx: 0, wrong: 0, errors: 0 });
    expect(report.requests).toBeGreaterThan(100); // it really was load, not a handful of requests
    expect(report.ok).toBe(report.requests);
    expect(t.pid("gateway")).toBe(gatewayPid);
    const health = await (await fetch(`${t.mesh.gateway!.url}/health`)).json();
    expect(health).toMatchObject({ status: "ok", actors: 2, healthy: 2 });
  });

  test("the same load without the token is refused, every request with 401 and none answered", async () => {
    const report = await load(t.mesh.gateway!.url, 1, 4);
    expect(report.requests).toBeGreaterThan(0);
    expect(report.non2xx).toBe(report.requests);
    expect(report.ok + report.wrong + report.errors).toBe(0);
    expect(report.problems[0]).toContain("HTTP 401");
  });
});

describe("the load's answer check", () => {
  test("accepts the right answer and names what is wrong with others", () => {
    const right = { meta: { msg_type: 2, trace_id: "t1", sender_id: "d4e5f6", receiver_id: "a1b2c3" }, payload: { task_id: "x1y2z3", result: 4 } };
    expect(seedAnswerProblem(right, "t1")).toBeUndefined();
    expect(seedAnswerProblem(right, "t2")).toContain("crossed");
    expect(seedAnswerProblem({ ...right, payload: { ...right.payload, result: 5 } }, "t1")).toContain("not 4");
    expect(seedAnswerProblem({ ...right, meta: { ...right.meta, msg_type: 4 } }, "t1")).toContain("msg_type");
    expect(seedAnswerProblem(null, "t1")).toBeDefined();
  });
});

describe("the gateway's bare forwarder baseline", () => {
  test("answers concurrent requests each with its own result, and its evaluator leaves with it", async () => {
    const fixture = await spawnFixture(new URL("../../bench/fixtures/bare-forwarder-fixture.ts", import.meta.url).pathname, [], UNPINNED);
    const evaluatorPid = Number(fixture.info.evaluatorPid);
    try {
      // Expressions answered out of order by nobody but their own line: each answer must be its own.
      const answers = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
        const body = { ...SEED_REQUEST, payload: { ...SEED_REQUEST.payload, task_id: `t${i}`, expression: `${i}*3+1` } };
        const response = await fetch(`${fixture.info.url}/hermes/v1/invoke`, { method: "POST", body: JSON.stringify(body) });
        return { status: response.status, json: (await response.json()) as { meta: { msg_type: number }; payload: { task_id: string; result: number } } };
      }));
      answers.forEach(({ status, json }, i) => {
        expect(status).toBe(200);
        expect(json.meta.msg_type).toBe(2);
        expect(json.payload).toMatchObject({ task_id: `t${i}`, result: i * 3 + 1 });
      });
      expect(isAlive(evaluatorPid)).toBe(true);
    } finally {
      await fixture[Symbol.asyncDispose]();
    }
    await waitFor(() => !isAlive(evaluatorPid), "the evaluator to exit with its server");
    expect(isAlive(evaluatorPid)).toBe(false);
  }, 20_000);
});
