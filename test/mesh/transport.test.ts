/**
 * The transport conformance suite: the same cases against a listener in another process, over
 * a Unix socket and over TCP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { parseAddress, type Address, dial } from "../../mesh/socket-transport.ts";
import type { Connection } from "../../mesh/connection.ts";
import { RequestChannel } from "../../mesh/requests.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { spawnBun, tempDir, waitFor, type Child } from "../helpers.ts";

const FIXTURE = join(import.meta.dir, "echo-server-fixture.ts");

for (const kind of ["unix", "tcp"] as const) {
  describe(`transport over ${kind}`, () => {
    const dir = tempDir();
    let server: Child;
    let address: Address;
    const connections: Connection[] = [];

    async function connect(options: { token?: string; codecs?: string[] } = {}): Promise<RequestChannel<Connection>> {
      const connection = await dial(address, { node: "client", ...options });
      connections.push(connection);
      return new RequestChannel(connection, "client");
    }

    beforeAll(async () => {
      const where = kind === "unix" ? join(dir.path, "mesh", "echo.sock") : "tcp://127.0.0.1:0";
      server = spawnBun(FIXTURE, [where, "s3cret"]);
      address = parseAddress((await server.waitForLine(/^ready /)).slice(6));
    });

    afterAll(async () => {
      await Promise.all(connections.map((c) => c.close()));
      await server[Symbol.asyncDispose]();
      dir[Symbol.dispose]();
    });

    test("request and response between two processes, UTF-8 byte-exact", async () => {
      const channel = await connect({ token: "s3cret" });
      const text = "你好，世界 🌍🚀 naïve";
      const reply = await channel.request({ target_agent: "echo" }, { text, n: 42 }, { timeoutMs: 5000, trace_id: "trace-1" });
      expect(reply.message_type).toBe("response");
      expect(reply.trace_id).toBe("trace-1");
      expect(reply.payload).toEqual({ text, n: 42 });
    });

    test("both codecs work: records negotiated by default, plain msgpack when only it is offered", async () => {
      const fast = await connect({ token: "s3cret" });
      expect(fast.connection.codec).toBe("msgpackr-records");
      const plain = await connect({ token: "s3cret", codecs: ["msgpack"] });
      expect(plain.connection.codec).toBe("msgpack");
      for (const channel of [fast, plain]) {
        const replies = await Promise.all(
          Array.from({ length: 200 }, (_, i) => channel.request({ target_agent: "echo" }, { i, shape: { [`k${i % 7}`]: i } })),
        );
        replies.forEach((r, i) => expect(r.payload).toEqual({ i, shape: { [`k${i % 7}`]: i } }));
      }
    });

    test("progress messages arrive before the response", async () => {
      const channel = await connect({ token: "s3cret" });
      const steps: number[] = [];
      const reply = await channel.request({ target_agent: "echo" }, { progress: 3 }, { onProgress: (p) => steps.push(p.step as number) });
      expect(steps).toEqual([1, 2, 3]);
      expect(reply.payload).toEqual({ progress: 3 });
    });

    test("a deadline that passes rejects with code 3 and cancels the handler in the other process", async () => {
      const channel = await connect({ token: "s3cret" });
      const started = Date.now();
      const error = await channel.request({ target_agent: "echo" }, { sleep_ms: 10_000 }, { timeoutMs: 150 }).catch((e) => e);
      expect(error).toBeInstanceOf(HermesError);
      expect(error.code).toBe(ErrorCode.TASK_TIMEOUT);
      expect(Date.now() - started).toBeLessThan(5000);
      await server.waitForLine(/^cancelled /);
    });

    test("an explicit cancel through an AbortSignal reaches the handler", async () => {
      const channel = await connect({ token: "s3cret" });
      const before = server.lines.filter((l) => l.startsWith("cancelled")).length;
      const controller = new AbortController();
      const sleeping = server.lines.filter((l) => l.startsWith("sleeping")).length;
      const pending = channel.request({ target_agent: "echo" }, { sleep_ms: 10_000 }, { signal: controller.signal });
      // Cancel once the handler is running in the other process, so the cancel has something to reach.
      await waitFor(() => server.lines.filter((l) => l.startsWith("sleeping")).length > sleeping, "the handler to start");
      controller.abort();
      expect((await pending.catch((e) => e)).code).toBe(ErrorCode.TASK_TIMEOUT);
      await waitFor(() => server.lines.filter((l) => l.startsWith("cancelled")).length > before, "cancel to reach the server");
    });

    test("a handler that throws answers code 7 and the peer keeps serving", async () => {
      const channel = await connect({ token: "s3cret" });
      const error = await channel.request({ target_agent: "echo" }, { throw: "boom" }).catch((e) => e);
      expect(error.code).toBe(ErrorCode.INTERNAL);
      expect(error.message).toBe("boom");
      expect((await channel.request({ target_agent: "echo" }, { after: true })).payload).toEqual({ after: true });
    });

    test("an expired ttl is answered with code 9", async () => {
      const channel = await connect({ token: "s3cret" });
      const error = await channel.request({ target_agent: "echo" }, { x: 1 }, { ttl: 0, timeoutMs: 2000 }).catch((e) => e);
      expect(error.code).toBe(ErrorCode.TTL_EXPIRED);
    });

    test("a wrong or missing token is refused with code 5", async () => {
      for (const token of ["wrong", undefined]) {
        const error = await dial(address, { node: "intruder", ...(token && { token }) }).catch((e) => e);
        expect(error).toBeInstanceOf(HermesError);
        expect(error.code).toBe(ErrorCode.AUTH_FAILED);
      }
    });

    test("large payloads survive partial writes in both directions", async () => {
      const channel = await connect({ token: "s3cret" });
      const big = "汉".repeat(1_500_000); // 4.5 MB of UTF-8: far more than one socket write takes
      const replies = await Promise.all([1, 2, 3].map((n) => channel.request({ target_agent: "echo" }, { n, big }, { timeoutMs: 20_000 })));
      for (const [i, r] of replies.entries()) {
        expect(r.payload.n).toBe(i + 1);
        expect((r.payload.big as string).length).toBe(big.length);
        expect(r.payload.big === big).toBe(true);
      }
    });

    test("many pipelined requests all come back, and every one is acknowledged", async () => {
      const channel = await connect({ token: "s3cret" });
      const n = 20_000;
      const replies = await Promise.all(Array.from({ length: n }, (_, i) => channel.request({ target_agent: "echo" }, { i })));
      expect(replies.every((r, i) => r.payload.i === i)).toBe(true);
      expect(await channel.connection.whenAcknowledged(5000)).toBe(true);
      expect(channel.connection.inFlight).toBe(0);
    });

    test("a clean close finishes both sides and later sends fail with code 10", async () => {
      const channel = await connect({ token: "s3cret" });
      await channel.request({ target_agent: "echo" }, { ok: 1 });
      await channel.connection.close();
      expect(channel.connection.isOpen).toBe(false);
      const error = await channel.request({ target_agent: "echo" }, { late: 1 }).catch((e) => e);
      expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    });
  });
}
