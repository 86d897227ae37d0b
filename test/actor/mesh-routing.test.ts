/** Routing across real actor processes: by name, pool instance, capability and topic; code 8 when nothing matches. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { waitFor } from "../helpers.ts";
import { startTestMesh, type TestMesh } from "./mesh-harness.ts";

describe("mesh routing", () => {
  let t: TestMesh;
  beforeAll(async () => {
    t = await startTestMesh(`
mesh:
  name: routing
supervisor:
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
      pool: 2
      subscribe: ["demo.#"]
    - actor: solo
      module: {ACTORS}/echo.ts
      capabilities: [solo-cap]
`);
  });
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  test("every instance is its own process, listening on its own socket", () => {
    const entries = t.mesh.registry.snapshot();
    expect(entries.map((e) => e.address).sort()).toEqual(["echo#0", "echo#1", "solo"]);
    const pids = new Set(entries.map((e) => e.pid));
    expect(pids.size).toBe(3);
    expect(pids.has(process.pid)).toBe(false);
    for (const e of entries) expect(e.health).toBe("healthy");
  });

  test("a request by name is answered; trace_id and non-ASCII text survive", async () => {
    const client = await t.client();
    const reply = await client.request("solo", { text: "你好 🌍" }, { trace_id: "trace-routing-1", timeoutMs: 5000 });
    expect(reply.payload).toEqual({ text: "你好 🌍" });
    expect(reply.trace_id).toBe("trace-routing-1");
    expect(reply.source_agent).toBe("solo");
  });

  test("a pool spreads requests over its instances; an instance can be addressed alone", async () => {
    const client = await t.client();
    const answers = await Promise.all(Array.from({ length: 40 }, () => client.request("echo", { op: "count" }, { timeoutMs: 5000 })));
    const by = new Set(answers.map((a) => a.source_agent));
    expect(by).toEqual(new Set(["echo#0", "echo#1"]));
    expect((await client.request("echo#1", { op: "count" })).source_agent).toBe("echo#1");
  });

  test("capability routing finds the actor that declares it; the module's own capability counts too", async () => {
    const client = await t.client();
    expect((await client.request({ capability: "solo-cap" }, { x: 1 })).source_agent).toBe("solo");
    // actors/echo.ts declares capability "echo" itself; all three instances have it.
    const sources = new Set((await Promise.all(Array.from({ length: 30 }, () => client.request({ capability: "echo" }, {})))).map((r) => r.source_agent));
    expect(sources.size).toBeGreaterThan(1);
  });

  test("a topic publication reaches one instance of each subscribing actor, and outside subscribers", async () => {
    const client = await t.client();
    const seen: string[] = [];
    await client.subscribe("demo.*.done", (event) => seen.push(event.topic!));
    const before = await Promise.all(["echo#0", "echo#1"].map(async (a) => Number((await client.request(a, { op: "count" })).payload.events)));
    const publisher = await t.client();
    await waitFor(() => publisher.registry.subscribersOf("demo.job.done").length === 2, "the subscription to reach the publisher's registry");
    expect(publisher.publish("demo.job.done", { ok: true })).toBe(2); // echo (one of its two instances) and the subscriber
    expect(publisher.publish("other.topic", {})).toBe(0);
    await waitFor(() => seen.length === 1, "the subscriber to get the event");
    expect(seen).toEqual(["demo.job.done"]);
    await waitFor(async () => {
      const after = await Promise.all(["echo#0", "echo#1"].map(async (a) => Number((await client.request(a, { op: "count" })).payload.events)));
      return after[0]! + after[1]! === before[0]! + before[1]! + 1;
    }, "exactly one echo instance to count the event");
  });

  test("nothing to route to is code 8 naming what the route type can reach, never clients", async () => {
    const client = await t.client();
    const expected = [["nobody", ["echo", "solo"]], [{ capability: "nothing" }, ["echo", "solo-cap"]], [{ topic: "no.subscribers" }, ["demo.#"]]] as const;
    for (const [route, known] of expected) {
      const error = await client.request(route, {}).catch((e) => e);
      expect(error).toBeInstanceOf(HermesError);
      expect(error.code).toBe(ErrorCode.UNROUTABLE);
      expect(error.fields.known).toEqual([...known]);
    }
  });

  test("a foreign MessagePack implementation can talk to an actor socket directly", async () => {
    const { encode, decode } = await import("@msgpack/msgpack");
    const frame = (value: unknown) => {
      const body = encode(value);
      const out = new Uint8Array(4 + body.length);
      new DataView(out.buffer).setUint32(0, body.length);
      out.set(body, 4);
      return out;
    };
    const frames: any[] = [];
    let buffer = new Uint8Array(0);
    const socket = await Bun.connect({
      unix: t.mesh.registry.byAddress("solo")!.socket,
      socket: {
        data(_s, chunk) {
          const joined = new Uint8Array(buffer.length + chunk.length);
          joined.set(buffer);
          joined.set(chunk, buffer.length);
          buffer = joined;
          while (buffer.length >= 4) {
            const length = new DataView(buffer.buffer, buffer.byteOffset).getUint32(0);
            if (buffer.length < 4 + length) break;
            frames.push(decode(buffer.subarray(4, 4 + length)));
            buffer = buffer.slice(4 + length);
          }
        },
      },
    });
    try {
      socket.write(frame({ message_type: "hello", protocol: 1, node: "foreign", codecs: ["msgpack"], window: 16 }));
      socket.write(frame({
        message_id: "01J00000000000000000000042", message_type: "request", trace_id: "foreign-trace", source_agent: "foreign",
        target_agent: "solo", reply_to: "foreign", timestamp: Date.now(), ttl: 5000, seq: 1, payload: { text: "ĥélló 世界" },
      }));
      await waitFor(() => frames.some((f) => f.message_type === "response"), "the response");
      const response = frames.find((f) => f.message_type === "response");
      expect(response.payload).toEqual({ text: "ĥélló 世界" });
      expect(response.correlation_id).toBe("01J00000000000000000000042");
      expect(response.trace_id).toBe("foreign-trace");
      await waitFor(() => frames.some((f) => f.message_type === "ack" && f.seq >= 1), "the ack");
    } finally {
      socket.end();
    }
  });
});
