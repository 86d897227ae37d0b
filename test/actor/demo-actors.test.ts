/** The demo actors in a real mesh: the calculator by capability, the ticker's clock.tick events and status. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Envelope } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { listActors, loadMeshFile } from "../../src/supervisor/mesh-file.ts";
import { waitFor } from "../helpers.ts";
import { startTestMesh, type TestMesh } from "./mesh-harness.ts";

describe("demo actors", () => {
  let t: TestMesh;
  beforeAll(async () => {
    t = await startTestMesh(`
mesh:
  name: demo-actors
supervisor:
  children:
    - actor: calculator
      module: {ACTORS}/calculator.ts
      pool: 1
      capabilities: [calculator]
    - actor: ticker
      module: {ACTORS}/ticker.ts
      env: { TICK_MS: "50" }
`);
  });
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  const failure = async (promise: Promise<unknown>): Promise<HermesError> => {
    const error = await promise.then(() => undefined, (e: unknown) => e);
    if (!(error instanceof HermesError)) throw new Error(`expected a HermesError, got ${String(error)}`);
    return error;
  };

  test("a request by capability 'calculator' is answered: 2+2 = 4", async () => {
    const client = await t.client();
    const reply = await client.request({ capability: "calculator" }, { expression: "2+2" }, { timeoutMs: 5000 });
    expect(reply.payload).toEqual({ result: 4, expression: "2+2" });
    expect(reply.source_agent).toBe("calculator");
  });

  test("precedence, power and the sign: (1+2)*3^2 = 27, -2^2 = -4, 2^3^2 = 512", async () => {
    const client = await t.client();
    const ask = async (expression: string) => (await client.request({ capability: "calculator" }, { expression })).payload.result;
    expect(await ask("(1+2)*3^2")).toBe(27);
    expect(await ask("-2^2")).toBe(-4);
    expect(await ask("2^3^2")).toBe(512);
    expect(await ask(" 0.1 + 0.2 ")).toBe(0.1 + 0.2);
  });

  test("the payload of the protocol's HTTP example: task_id passes through, result 4", async () => {
    const client = await t.client();
    const reply = await client.request("calculator", { task_id: "x1y2z3", tool: "calculator", expression: "2+2" });
    expect(reply.payload).toEqual({ task_id: "x1y2z3", result: 4, expression: "2+2" });
  });

  test("division by zero is code 2 with a reason naming the position, and what was expected", async () => {
    const client = await t.client();
    const error = await failure(client.request({ capability: "calculator" }, { task_id: "t-1", expression: "1 / (2 - 2)" }));
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error.fields.reason).toBe("division by zero at position 3");
    expect(error.fields.expected).toBe("a non-zero divisor");
    expect(error.fields).toMatchObject({ position: 3, expression: "1 / (2 - 2)", task_id: "t-1" });
  });

  test("garbage is code 2 too, and the actor keeps answering", async () => {
    const client = await t.client();
    const error = await failure(client.request("calculator", { expression: "2 + (3" }));
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error.fields.reason).toMatch(/missing '\)' for the '\(' at position 5/);
    expect((await client.request("calculator", { expression: "6*7" })).payload.result).toBe(42);
  });

  test("a missing or non-string expression is code 2 with reason and expected", async () => {
    const client = await t.client();
    for (const [payload, reason] of [[{}, /no 'expression'/], [{ expression: 42 }, /'expression' is a number, not a string/]] as const) {
      const error = await failure(client.request("calculator", payload));
      expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
      expect(error.fields.reason).toMatch(reason);
      expect(error.fields.expected).toMatch(/a string/);
    }
  });

  test("a tool other than the calculator is code 4 naming the one available", async () => {
    const client = await t.client();
    const error = await failure(client.request("calculator", { tool: "search_web", expression: "2+2" }));
    expect(error.code).toBe(ErrorCode.TOOL_NOT_FOUND);
    expect(error.fields).toMatchObject({ requested_tool: "search_web", available_tools: ["calculator"] });
  });

  test("a client subscribed to clock.tick receives ticks with increasing n and an ISO time", async () => {
    const client = await t.client();
    const ticks: Envelope[] = [];
    const stop = await client.subscribe("clock.tick", (event) => ticks.push(event));
    await waitFor(() => ticks.length >= 4, "four ticks");
    await stop();
    const numbers = ticks.map((e) => e.payload.n as number);
    for (let i = 1; i < numbers.length; i++) expect(numbers[i]).toBe(numbers[i - 1]! + 1);
    for (const tick of ticks) {
      expect(tick.topic).toBe("clock.tick");
      expect(tick.source_agent).toBe("ticker");
      expect(new Date(tick.payload.at as string).toISOString()).toBe(tick.payload.at as string);
    }
  });

  test("the ticker's status tells its count and interval; the count goes up", async () => {
    const client = await t.client();
    const first = (await client.request("ticker", { op: "status" })).payload;
    expect(first.interval_ms).toBe(50);
    expect(first.ticks).toBeGreaterThanOrEqual(1);
    await waitFor(async () => ((await client.request("ticker", { op: "status" })).payload.ticks as number) > (first.ticks as number), "the tick count to go up");
    const error = await failure(client.request("ticker", { op: "reset" }));
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error.fields).toMatchObject({ reason: 'unknown op "reset"', expected: '{ op: "status" }' });
  });
});

test("the example actors/mesh.yaml runs echo, the calculator, the ticker, the agent pipeline and the workflow demo", () => {
  const actors = listActors(loadMeshFile(join(import.meta.dir, "../../actors/mesh.yaml")));
  expect(actors.map((a) => a.actor)).toEqual(["echo", "calculator", "ticker", "planner", "coder", "reviewer", "pipeline", "image-gen", "caption-gen", "validator", "orchestrator"]);
  expect(actors[1]).toMatchObject({ pool: 1, capabilities: ["calculator"] });
  expect(actors[2]!.env).toEqual({ TICK_MS: "1000" });
  // The seed design's workflow (actors/workflows/image_with_caption.yaml) asks for text_generation.
  expect(actors.find((a) => a.actor === "caption-gen")!.capabilities).toEqual(["caption_generation", "text_generation"]);
});
