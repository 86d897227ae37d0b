/**
 * A poison payload (nested far too deep, or too big for a frame) is refused at once to its
 * sender with a coded error, takes no seq, and the link it was sent on keeps flowing: real
 * actor processes, a real client, and a foreign peer on a raw socket.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { MAX_PAYLOAD_DEPTH } from "../../mesh/msgpack-values.ts";
import { newMessageId } from "../../mesh/ids.ts";
import { waitFor } from "../helpers.ts";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";
import { HELLO, rawConnect } from "./raw-client.ts";

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

async function codeOf(promise: Promise<unknown>): Promise<{ code: number; error: HermesError; ms: number }> {
  const t0 = performance.now();
  try {
    await promise;
  } catch (error) {
    return { code: (error as HermesError).code, error: error as HermesError, ms: performance.now() - t0 };
  }
  throw new Error("the request was answered");
}

/** More requests than a whole credit window (4096), pipelined in batches, all answered. */
async function fullWindowOfRequests(request: (n: number) => Promise<{ payload: Record<string, unknown> }>): Promise<number> {
  let answered = 0;
  for (let batch = 0; batch < 5; batch++) {
    const replies = await Promise.all(Array.from({ length: 1000 }, (_, i) => request(batch * 1000 + i)));
    for (const [i, reply] of replies.entries()) if (reply.payload.n === batch * 1000 + i) answered++;
  }
  return answered;
}

describe("poison payloads", () => {
  let t: TestMesh;
  beforeAll(async () => {
    t = await startTestMesh(`
mesh:
  name: poison
supervisor:
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
    - actor: shaper
      module: {FIXTURES}/shaper.ts
`);
  });
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  test("a request nested 20,000 levels deep is refused at once with code 2 naming where; then 5,000 requests on the same link are all answered", async () => {
    const client = await t.client();
    await client.request("echo", { warm: 1 }, { timeoutMs: 5000 });
    const payload = { v: nested(20_000) };
    const t0 = performance.now();
    const poison = await codeOf(client.request("echo", payload, { timeoutMs: 10_000 }));
    const refusedMs = performance.now() - t0;
    expect(poison.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(String(poison.error.fields.reason)).toStartWith("payload.v.a.a.a.a.a…");
    console.log(`poison payload (20,000 levels) refused in ${refusedMs.toFixed(2)} ms`);
    expect(refusedMs).toBeLessThan(1000);
    // Just inside the limit travels; just past it does not.
    expect((await client.request("echo", nested(MAX_PAYLOAD_DEPTH), { timeoutMs: 5000 })).payload).toEqual(nested(MAX_PAYLOAD_DEPTH));
    expect((await codeOf(client.request("echo", nested(MAX_PAYLOAD_DEPTH + 1), { timeoutMs: 5000 }))).code).toBe(ErrorCode.INVALID_REQUEST);
    expect(await fullWindowOfRequests((n) => client.request("echo", { n }, { timeoutMs: 20_000 }))).toBe(5000);
  });

  test("an answer that cannot travel (too deep, over the frame limit) reaches the requester as a coded error at once", async () => {
    const client = await t.client();
    const deep = await codeOf(client.request("shaper", { depth: MAX_PAYLOAD_DEPTH + 5 }, { timeoutMs: 10_000 }));
    expect(deep.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(deep.error.message).toContain("the answer could not be sent");
    expect(deep.ms).toBeLessThan(1000);
    const big = await codeOf(client.request("shaper", { bytes: 17 * 1024 * 1024 }, { timeoutMs: 10_000 }));
    expect(big.code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
    expect(big.error.fields).toMatchObject({ resource: "frame_bytes", limit: 16 * 1024 * 1024 });
    expect(await fullWindowOfRequests((n) => client.request("shaper", { n }, { timeoutMs: 20_000 }))).toBe(5000);
  });

  test("a request over the peer's frame limit fails at once with code 6, sent once and never retried", async () => {
    const client = await t.client();
    const big = await codeOf(client.request("echo", { text: "x".repeat(17 * 1024 * 1024) }, { timeoutMs: 10_000 }));
    expect(big.code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
    expect(big.error.fields).toMatchObject({ resource: "frame_bytes", limit: 16 * 1024 * 1024 });
    expect(big.ms).toBeLessThan(2000);
    expect(client.deadLetters()).toEqual([]);
    expect((await client.request("echo", { after: 1 }, { timeoutMs: 5000 })).payload).toEqual({ after: 1 });
  });

  test("a foreign peer's too-deep envelope gets code 2 correlated to it and is acknowledged, so its link goes on", async () => {
    const raw = await rawConnect(t.mesh.registry.byAddress("echo")!.socket);
    try {
      raw.sendFrame(HELLO);
      const envelope = (seq: number, payload: unknown) => ({
        message_id: newMessageId(), message_type: "request", trace_id: `poison-${seq}`, source_agent: "raw",
        target_agent: "echo", reply_to: "raw", timestamp: Date.now(), ttl: 10_000, seq, payload,
      });
      const poison = envelope(1, nested(MAX_PAYLOAD_DEPTH + 10));
      raw.sendFrame(poison);
      raw.sendFrame(envelope(2, { n: 2 }));
      await waitFor(() => raw.frames.some((f) => f.message_type === "response" && f.trace_id === "poison-2"), "the request after the poison answered");
      const refusal = raw.frames.find((f) => f.message_type === "error" && f.correlation_id === poison.message_id);
      expect(refusal?.payload.error_code).toBe(ErrorCode.INVALID_REQUEST);
      await waitFor(() => raw.frames.some((f) => f.message_type === "ack" && f.seq >= 2), "a cumulative ack past the poison");
    } finally {
      raw.end();
    }
  });
});
