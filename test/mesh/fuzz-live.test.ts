/**
 * Bad input against a listener in another process: each case gets a coded error or a close,
 * the process never crashes, its memory stays bounded, and a well-behaved client keeps being
 * served the whole time.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { RequestChannel } from "../../mesh/requests.ts";
import { dial } from "../../mesh/socket-transport.ts";
import { encodeFrame } from "../../mesh/frames.ts";
import { createPlainCodec } from "../../mesh/codecs.ts";
import { rssKiB, spawnBun, tempDir, waitFor, type Child } from "../helpers.ts";
import { HELLO, rawConnect } from "./raw-client.ts";

const FIXTURE = join(import.meta.dir, "echo-server-fixture.ts");
const plain = createPlainCodec();
const errorsOf = (frames: any[]) => frames.filter((f) => f.message_type === "error").map((f) => f.payload.error_code);

describe("bad input on a live socket", () => {
  const dir = tempDir();
  const path = join(dir.path, "echo.sock");
  let server: Child;

  beforeAll(async () => {
    server = spawnBun(FIXTURE, [path], { HELLO_TIMEOUT_MS: "400", FRAME_TIMEOUT_MS: "400" });
    await server.waitForLine(/^ready/);
  });
  afterAll(async () => {
    await server[Symbol.asyncDispose]();
    dir[Symbol.dispose]();
  });

  test("random bytes instead of a hello: closed, with a coded error when a frame could be read", async () => {
    for (let i = 0; i < 20; i++) {
      const raw = await rawConnect(path);
      raw.write(crypto.getRandomValues(new Uint8Array(1 + Math.floor(Math.random() * 2000))));
      await raw.closed; // length claims too big, zero, undecodable, or simply incomplete until the timeout
      for (const code of errorsOf(raw.frames)) expect([2, 6]).toContain(code);
    }
  });

  test("a claimed length of 4 GiB gets code 6 and a close, without allocating it", async () => {
    const raw = await rawConnect(path);
    raw.write(new Uint8Array([0xff, 0xff, 0xff, 0xff, 1, 2, 3]));
    await raw.closed;
    expect(errorsOf(raw.frames)).toEqual([6]);
  });

  test("a zero-length frame gets code 2 and a close", async () => {
    const raw = await rawConnect(path);
    raw.write(new Uint8Array([0, 0, 0, 0]));
    await raw.closed;
    expect(errorsOf(raw.frames)).toEqual([2]);
  });

  test("bad hellos get code 2 and a close", async () => {
    const bad = [
      { ...HELLO, protocol: 2 },
      { ...HELLO, codecs: ["json"] },
      { ...HELLO, window: -1 },
      { message_type: "request", payload: {} },
      [1, 2, 3],
      "hello",
    ];
    for (const hello of bad) {
      const raw = await rawConnect(path);
      raw.sendFrame(hello);
      await raw.closed;
      expect(errorsOf(raw.frames)).toEqual([2]);
    }
  });

  test("after a good hello, non-map bodies and invalid envelopes get code 2 and the connection stays usable", async () => {
    const raw = await rawConnect(path);
    raw.sendFrame(HELLO);
    await waitFor(() => raw.frames.some((f) => f.message_type === "hello"), "the server's hello");
    for (const body of [[1, 2], "text", null, 42, { message_type: "request", payload: [] }]) raw.sendFrame(body);
    raw.write(encodeFrame(new Uint8Array([0xc1]))); // never-used msgpack byte
    await waitFor(() => errorsOf(raw.frames).length === 6, "six coded errors");
    expect(errorsOf(raw.frames)).toEqual([2, 2, 2, 2, 2, 2]);
    // Still served: a valid request through the same raw socket.
    raw.sendFrame({
      message_id: "01J00000000000000000000000", message_type: "request", trace_id: "t", source_agent: "raw",
      target_agent: "echo", reply_to: "raw", timestamp: Date.now(), ttl: 5000, seq: 1, payload: { still: "here" },
    });
    await waitFor(() => raw.frames.some((f) => f.message_type === "response"), "the response");
    expect(raw.frames.find((f) => f.message_type === "response").payload).toEqual({ still: "here" });
    expect(raw.isClosed()).toBe(false);
    raw.end();
  });

  test("a flood of bad frames is cut off after the limit", async () => {
    const raw = await rawConnect(path);
    raw.sendFrame(HELLO);
    for (let i = 0; i < 100; i++) raw.sendFrame([i]);
    await raw.closed;
    expect(errorsOf(raw.frames).length).toBeGreaterThan(0);
  });

  test("slow-loris: a frame that never completes is closed after the frame timeout; so is a silent connection", async () => {
    const loris = await rawConnect(path);
    loris.sendFrame(HELLO);
    loris.write(new Uint8Array([0, 0, 0, 100, 0x81])); // 1 of 100 bytes
    const silent = await rawConnect(path);
    await Promise.all([loris.closed, silent.closed]);
    expect(errorsOf(loris.frames)).toEqual([2]);
  });

  test("garbage from many connections at once while a good client is served; memory stays bounded", async () => {
    const good = new RequestChannel(await dial({ path }, { node: "good" }), "good");
    const rssBefore = rssKiB(server.proc.pid);
    let served = 0;
    let stop = false;
    const serving = (async () => {
      while (!stop) {
        const reply = await good.request({ target_agent: "echo" }, { n: served }, { timeoutMs: 5000 });
        expect(reply.payload.n).toBe(served);
        served++;
      }
    })();
    const attackers = Array.from({ length: 40 }, async (_, i) => {
      const raw = await rawConnect(path);
      if (i % 2 === 0) raw.sendFrame(HELLO);
      for (let j = 0; j < 20; j++) {
        const kind = (i + j) % 4;
        if (kind === 0) raw.write(crypto.getRandomValues(new Uint8Array(512)));
        else if (kind === 1) raw.write(encodeFrame(plain.encode([j, "x".repeat(1000)])));
        else if (kind === 2) raw.write(new Uint8Array([0x00, 0xf0, 0x00, 0x00])); // claims 15 MiB, sends none
        else raw.write(encodeFrame(crypto.getRandomValues(new Uint8Array(200))));
      }
      await raw.closed;
    });
    await Promise.all(attackers);
    stop = true;
    await serving;
    expect(served).toBeGreaterThan(0);
    expect(server.proc.exitCode).toBeNull();
    const grownMiB = (rssKiB(server.proc.pid) - rssBefore) / 1024;
    expect(grownMiB).toBeLessThan(150);
    const after = await good.request({ target_agent: "echo" }, { after: true });
    expect(after.payload).toEqual({ after: true });
    await good.connection.close();
  });
});
