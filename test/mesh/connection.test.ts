/** Connection behaviour that needs a controlled peer: credit window, acks, ping/pong, status. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { Connection, type ByteStream, type ConnectionStatus } from "../../mesh/connection.ts";
import { AckTracker } from "../../mesh/flow-control.ts";
import { dial, listen, socketTransport } from "../../mesh/socket-transport.ts";
import { PeerLink } from "../../mesh/peer-link.ts";
import { createEvent, createReply, createRequest, MessageType } from "../../mesh/envelope.ts";
import { FrameDecoder } from "../../mesh/frames.ts";
import { unpack } from "msgpackr";
import { holdsWithin, tempDir, waitFor } from "../helpers.ts";

async function pair(serverOptions: Record<string, unknown> = {}, clientOptions: Record<string, unknown> = {}) {
  const dir = tempDir();
  const path = join(dir.path, "p.sock");
  let server: Connection | undefined;
  const listener = await listen({ path }, { node: "server", ...serverOptions, onConnection: (c) => (server = c) });
  const client = await dial({ path }, { node: "client", ...clientOptions });
  await waitFor(() => server !== undefined, "server side of the connection");
  return {
    client,
    server: server!,
    async [Symbol.asyncDispose]() {
      await client.close();
      await listener.close();
      dir[Symbol.dispose]();
    },
  };
}

describe("credit window", () => {
  test("a sender never has more unacknowledged envelopes than the peer's window", async () => {
    await using p = await pair({ window: 8 });
    const received: number[] = [];
    p.server.onEnvelope = (env, seq) => received.push(seq); // handled later, not now
    for (let i = 0; i < 100; i++) p.client.send(createEvent("client", { target_agent: "server" }, { i }));
    await waitFor(() => received.length === 8, "the first window of envelopes");
    expect(p.client.inFlight).toBe(8);
    expect(p.client.backlogged).toBe(92);
    expect(received.length).toBe(8);

    // Handling releases credit; everything arrives in order, once.
    p.server.onEnvelope = (env, seq) => {
      received.push(seq);
      p.server.settle(seq);
    };
    for (const seq of received.slice()) p.server.settle(seq);
    await waitFor(() => received.length === 100, "all 100 envelopes");
    expect(received).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(await p.client.whenAcknowledged(2000)).toBe(true);
  });

  test("out-of-order handling acks only the contiguous prefix", () => {
    const tracker = new AckTracker();
    expect(tracker.settle(3)).toBe(false);
    expect(tracker.settle(2)).toBe(false);
    expect(tracker.takeAck()).toBe(0); // seq 1 is not handled yet: nothing may be acked
    expect(tracker.settle(1)).toBe(true);
    expect(tracker.takeAck()).toBe(3);
    expect(tracker.takeAck()).toBe(0);
    expect(tracker.settle(2)).toBe(false); // already covered
  });

  test("unacknowledged envelopes are kept for redelivery, oldest first", async () => {
    await using p = await pair({ window: 2 });
    let received = 0;
    p.server.onEnvelope = () => received++;
    for (let i = 0; i < 5; i++) p.client.send(createEvent("client", { target_agent: "server" }, { i }));
    await waitFor(() => received === 2, "the first window");
    expect(p.client.unacknowledged().map((e) => e.payload.i)).toEqual([0, 1, 2, 3, 4]);
  });

  test("they come back with the time they waited taken off their ttl, once, and nothing of the sender's on them", async () => {
    await using p = await pair({ window: 2 });
    const received: number[] = [];
    p.server.onEnvelope = (env, seq) => received.push(seq); // settled by hand below
    const sent = [0, 1, 2, 3].map((i) => createEvent("client", { target_agent: "server" }, { i }, { ttl: 10_000 }));
    const before = Date.now();
    for (const env of sent) p.client.send(env);
    const sentAt = Date.now();
    await waitFor(() => received.length === 2 && Date.now() - sentAt >= 40, "the first window, 40 ms on");
    // Credit for one: the first parked envelope goes out, still counting from when it was parked.
    p.server.settle(received[0]!);
    await waitFor(() => received.length === 3, "the first parked envelope, released");
    for (const env of sent) expect(Object.getOwnPropertySymbols(env)).toEqual([]);
    const asked = Date.now();
    const first = p.client.unacknowledged().map((e) => [e.payload.i, e.ttl] as const);
    const after = Date.now();
    expect(first.map(([i]) => i)).toEqual([1, 2, 3]);
    for (const [, ttl] of first) {
      expect(ttl).toBeLessThanOrEqual(10_000 - 40); // each waited at least since sentAt
      expect(ttl).toBeGreaterThanOrEqual(10_000 - (after - before));
    }
    // Asked again: only the time between the two calls is taken off, not the wait again.
    const second = p.client.unacknowledged().map((e) => e.ttl);
    const again = Date.now();
    for (const [k, ttl] of second.entries()) expect(first[k]![1] - ttl).toBeLessThanOrEqual(again - asked);
  });

  test("a closed link hands back what its connection held unacknowledged, then what was queued", async () => {
    const dir = tempDir();
    const path = join(dir.path, "l.sock");
    const received: number[] = [];
    const listener = await listen({ path }, { node: "server", onConnection: (c) => (c.onEnvelope = (env, seq) => received.push(seq)) });
    const link = new PeerLink({
      address: "server", endpoint: () => path, transport: socketTransport, connection: { node: "client" },
      onEnvelope: () => {}, onDeadLetter: () => {}, onExpired: () => {}, onUnsendable: () => {},
    });
    try {
      await link.open();
      for (let i = 0; i < 3; i++) link.send(createEvent("client", { target_agent: "server" }, { i }));
      await waitFor(() => received.length === 3, "three envelopes at the server, none acknowledged");
      expect((await link.close()).map((e) => e.payload.i)).toEqual([0, 1, 2]);
    } finally {
      await link.close();
      await listener.close();
      dir[Symbol.dispose]();
    }
  });
});

describe("liveness", () => {
  test("an idle connection pings; a peer that stops answering is reported unhealthy", async () => {
    await using p = await pair({}, { pingIntervalMs: 20 });
    const statuses: ConnectionStatus["type"][] = [];
    p.client.onStatus = (s) => statuses.push(s.type);
    await waitFor(() => p.client.stats.pongsReceived >= 3, "three pongs");
    expect(statuses).not.toContain("unhealthy");
    // Freeze the server's process-side reading by pausing its socket handler: stop pongs.
    (p.server as unknown as { handleData: (c: Uint8Array) => void }).handleData = () => {};
    await waitFor(() => statuses.includes("unhealthy"), "the unhealthy status", 3000);
  });
});

describe("held acks (a hello's ack_delay_ms)", () => {
  test("without the offer a lone ack goes at once; with it, it rides on the next frame the receiver sends", async () => {
    await using prompt = await pair();
    prompt.server.onEnvelope = (_env, seq) => prompt.server.settle(seq);
    prompt.client.send(createEvent("client", { target_agent: "server" }, { i: 0 }));
    await waitFor(() => prompt.client.inFlight === 0, "the protocol's prompt ack", 2000);

    await using p = await pair({}, { ackDelayMs: 60_000 });
    expect(p.server.peer?.ack_delay_ms).toBe(60_000);
    let handled = 0;
    p.server.onEnvelope = (_env, seq) => {
      handled++;
      p.server.settle(seq);
    };
    for (let i = 0; i < 3; i++) p.client.send(createEvent("client", { target_agent: "server" }, { i }));
    await waitFor(() => handled === 3, "three events handled");
    // Forty times the 5 ms the protocol allows by default: the ack is held, not late.
    expect(await holdsWithin(() => p.client.inFlight === 0, 200)).toBe(false);
    expect(p.client.inFlight).toBe(3);
    p.client.onEnvelope = () => {};
    p.server.send(createEvent("server", { target_agent: "client" }, { back: true }));
    await waitFor(() => p.client.inFlight === 0, "the ack, riding on the server's event", 2000);
  });

  test("whenAcknowledged asks a peer holding acks for them with a ping", async () => {
    await using p = await pair({}, { ackDelayMs: 60_000 });
    p.server.onEnvelope = (_env, seq) => p.server.settle(seq);
    p.client.send(createEvent("client", { target_agent: "server" }, { i: 0 }));
    p.client.send(createEvent("client", { target_agent: "server" }, { i: 1 }));
    const started = performance.now();
    expect(await p.client.whenAcknowledged(3000)).toBe(true);
    expect(performance.now() - started).toBeLessThan(1500);
    expect(p.client.stats.pongsReceived).toBeGreaterThanOrEqual(1);
  });

  test("a quarter of the receiver's window owed is acknowledged at once, offer or not", async () => {
    await using p = await pair({ window: 8 }, { ackDelayMs: 60_000 });
    let handled = 0;
    p.server.onEnvelope = (_env, seq) => {
      handled++;
      p.server.settle(seq);
    };
    p.client.send(createEvent("client", { target_agent: "server" }, { i: 0 }));
    await waitFor(() => handled === 1, "the first event handled");
    expect(await holdsWithin(() => p.client.inFlight === 0, 100)).toBe(false);
    p.client.send(createEvent("client", { target_agent: "server" }, { i: 1 }));
    await waitFor(() => p.client.inFlight === 0, "the ack of two of a window of 8", 2000);
  });

  test("a held ack goes with a frame too big to wait for the end of the tick", async () => {
    await using p = await pair({}, { ackDelayMs: 60_000 });
    p.server.onEnvelope = (_env, seq) => {
      // Past the write queue's 32 KiB high-water mark: written at once, before the settle.
      p.server.send(createEvent("server", { target_agent: "client" }, { blob: "x".repeat(40_000) }));
      p.server.settle(seq);
    };
    let got = 0;
    p.client.onEnvelope = () => void got++;
    p.client.send(createEvent("client", { target_agent: "server" }, { i: 0 }));
    await waitFor(() => got === 1 && p.client.inFlight === 0, "the big answer, and the ack with it", 2000);
  });

  test("a sender out of byte credit asks a peer holding acks for them, and goes on", async () => {
    await using p = await pair({}, { ackDelayMs: 60_000, maxUnackedBytes: 2048 });
    let handled = 0;
    p.server.onEnvelope = (_env, seq) => {
      handled++;
      p.server.settle(seq);
    };
    for (let i = 0; i < 8; i++) p.client.send(createEvent("client", { target_agent: "server" }, { i, pad: "y".repeat(400) }));
    expect(p.client.backlogged).toBeGreaterThan(0);
    await waitFor(() => handled === 8 && p.client.backlogged === 0, "all eight sent and handled", 3000);
    expect(await p.client.whenAcknowledged(2000)).toBe(true);
  });

  test("a held ack goes once its delay has passed", async () => {
    await using p = await pair({}, { ackDelayMs: 150 });
    p.server.onEnvelope = (_env, seq) => p.server.settle(seq);
    const sent = performance.now();
    p.client.send(createEvent("client", { target_agent: "server" }, { i: 0 }));
    await waitFor(() => p.client.inFlight === 0, "the held ack", 3000);
    expect(performance.now() - sent).toBeGreaterThanOrEqual(140);
  });
});

/**
 * Two Connections joined in this process, plain msgpack both ways: each write is recorded as
 * the message types of its frames and reaches the other side on the next macrotask, as a
 * socket's data callback would.
 */
function recordedPair() {
  const writes = { client: [] as string[][], server: [] as string[][] };
  const stream = (from: "client" | "server", to: () => Connection): ByteStream => {
    const decoder = new FrameDecoder();
    return {
      write(data, offset, length) {
        const chunk = data.slice(offset, offset + length);
        const types: string[] = [];
        decoder.push(chunk, (bytes, start, end) => void types.push((unpack(bytes.subarray(start, end)) as { message_type: string }).message_type));
        writes[from].push(types);
        setImmediate(() => to().handleData(chunk));
        return length;
      },
      end() {},
    };
  };
  let client!: Connection;
  let server!: Connection;
  client = new Connection(stream("client", () => server), "dialer", { node: "client", codecs: ["msgpack"] });
  server = new Connection(stream("server", () => client), "acceptor", { node: "server" });
  return { client, server, writes };
}

describe("when an answer is written", () => {
  const request = (i: number) => createRequest("client", { target_agent: "server" }, { i });

  test("the answer to the last frame read goes out before the work after it, with its ack", async () => {
    const p = recordedPair();
    await p.client.ready;
    await waitFor(() => p.writes.server.length > 0, "the server's hello");
    const writesBefore: number[] = [];
    const writesAfter: number[] = [];
    p.server.onEnvelope = (env, seq) => {
      writesBefore.push(p.writes.server.length);
      p.server.send(createReply(MessageType.RESPONSE, env, "server", { ok: true }), seq);
      p.server.settle(seq);
      // What the handler does after answering (records, bookkeeping) no longer holds the answer back.
      writesAfter.push(p.writes.server.length);
    };
    let answers = 0;
    p.client.onEnvelope = (_env, seq) => {
      answers++;
      p.client.settle(seq);
    };
    for (let i = 1; i <= 3; i++) {
      const before = p.writes.server.length;
      p.client.send(request(i));
      await waitFor(() => answers === i, `answer ${i}`);
      expect(p.writes.server.slice(before)).toEqual([["response", "ack"]]);
    }
    expect(writesAfter).toEqual(writesBefore.map((n) => n + 1));
    await p.client.close();
  });

  test("an ack due goes ahead of the first frame of a write", async () => {
    const p = recordedPair();
    await p.client.ready;
    p.server.onEnvelope = (env, seq) => {
      p.server.send(createReply(MessageType.RESPONSE, env, "server", {}), seq);
      p.server.settle(seq);
    };
    let answers = 0;
    p.client.onEnvelope = (_env, seq) => {
      answers++;
      p.client.settle(seq);
      // The next request in the same turn: the ack of this answer rides on its write, in front.
      if (answers < 3) p.client.send(request(answers + 1));
    };
    p.client.send(request(1));
    await waitFor(() => answers === 3, "three answers");
    const withRequests = p.writes.client.filter((types) => types.includes("request"));
    expect(withRequests).toEqual([["request"], ["ack", "request"], ["ack", "request"]]);
    await p.client.close();
  });

  test("answers to requests read together, or while others are unacknowledged, share the end of the turn's write", async () => {
    const p = recordedPair();
    await p.client.ready;
    await waitFor(() => p.writes.server.length > 0, "the server's hello");
    const inside: number[] = [];
    p.server.onEnvelope = (env, seq) => {
      p.server.send(createReply(MessageType.RESPONSE, env, "server", {}), seq);
      p.server.settle(seq);
      inside.push(p.writes.server.length);
    };
    let answers = 0;
    p.client.onEnvelope = () => void answers++; // never settled: the server's answers stay unacknowledged
    const before = p.writes.server.length;
    for (let i = 1; i <= 3; i++) p.client.send(request(i)); // one write of three requests
    await waitFor(() => answers === 3, "three answers");
    expect(inside).toEqual([before, before, before]);
    expect(p.writes.server.slice(before)).toEqual([["response", "response", "response", "ack"]]);
    // A lone request now, with three answers unacknowledged: its answer waits for the end of the turn too.
    p.client.send(request(4));
    await waitFor(() => answers === 4, "the fourth answer");
    expect(inside[3]).toBe(before + 1);
    await p.client.close();
  });
});
