import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createEvent, createRequest, type Envelope } from "../../mesh/envelope.ts";
import { EventLog, spansPathOf } from "../../src/observability/event-log.ts";
import { readEvents } from "../../src/observability/event-log-reader.ts";
import { decodeSpans } from "../../src/observability/span-log-reader.ts";
import { SpanBatch, SPAN_BATCH_MAGIC } from "../../src/observability/span-log.ts";
import { spanIdOf } from "../../src/observability/trace-context.ts";
import { findTrace, readTrace } from "../../src/observability/trace-tree.ts";
import { tempDir } from "../helpers.ts";

/** One whole batch of `n` handled records of trace `trace`, written by the actor "a". */
function batchOf(trace: string, n: number): Buffer {
  const batch = new SpanBatch(JSON.stringify({ actor: "a" }));
  for (let i = 0; i < n; i++) batch.handled(request(trace), i, 1, 1, undefined, undefined);
  return Buffer.from(batch.take());
}

/** A request with every optional field a handled record keeps: its own trace id, topic-free, a parent, a capability. */
function request(trace: string, source = "client-1"): Envelope {
  return createRequest(source, { capability: "calc" }, { n: 1 }, { trace_id: trace, headers: { traceparent: `00-${"a".repeat(32)}-00f067aa0ba902b7-01` } });
}

describe("span records", () => {
  test("a handled record reads back as the object its JSON line was: every field, in the same order, any characters", () => {
    const batch = new SpanBatch(JSON.stringify({ actor: "calc#0" }));
    const env = request('trace "quoted" 你好 🌍', "sender ü");
    batch.handled(env, 1_765_000_000_000.25, 0.4567, 2, 7, "00f067aa0ba902b7");
    const event = createEvent("pub", { topic: "news.eu" }, { x: 1 });
    batch.handled(event, 1_765_000_000_001, 0, 1, undefined, undefined);
    const [a, b] = decodeSpans(batch.take());
    expect(Object.keys(a!)).toEqual(["ts", "actor", "event", "type", "trace_id", "message_id", "span_id", "parent_span_id", "source", "capability", "attempt", "started_at", "duration_ms", "status", "error_code"]);
    expect(a).toMatchObject({
      actor: "calc#0", event: "handled", type: "request", trace_id: 'trace "quoted" 你好 🌍', message_id: env.message_id, span_id: spanIdOf(env.message_id),
      parent_span_id: "00f067aa0ba902b7", source: "sender ü", capability: "calc", attempt: 2, started_at: 1_765_000_000_000.25, duration_ms: 0.457, status: "error", error_code: 7,
    });
    expect(Math.abs(Number(a!.ts) - Date.now())).toBeLessThan(60_000);
    // An event whose trace is its own id: the id is stored once and both fields read back.
    expect(b).toMatchObject({ event: "handled", type: "event", trace_id: event.message_id, message_id: event.message_id, topic: "news.eu", status: "ok", duration_ms: 0 });
    expect("error_code" in b!).toBe(false);
    expect("parent_span_id" in b!).toBe(false);
  });

  test("a gateway's span (its own span id, a label, no message) and a sent record read back; a code that is no number reads as null", () => {
    const batch = new SpanBatch(JSON.stringify({ actor: "gateway" }));
    batch.handledSpan({ type: "request", label: "request → capability:calc", trace_id: "t7u8v9", span_id: "0123456789abcdef", parent_span_id: "00f067aa0ba902b7", started_at: 5, duration_ms: 1.23456 });
    batch.handledSpan({ type: "request", label: "x", trace_id: "t2", span_id: "fedcba9876543210", started_at: 6, duration_ms: 1, error_code: Number.NaN });
    const env = request("t7u8v9");
    batch.sent(env, JSON.stringify(["calc#0", "calc#1"]), "00f067aa0ba902b7");
    const [gateway, broken, sent] = decodeSpans(batch.take());
    expect(Object.keys(gateway!)).toEqual(["ts", "actor", "event", "type", "label", "trace_id", "span_id", "parent_span_id", "started_at", "duration_ms", "status"]);
    expect(gateway).toMatchObject({ label: "request → capability:calc", trace_id: "t7u8v9", span_id: "0123456789abcdef", duration_ms: 1.235, status: "ok" });
    expect(broken).toMatchObject({ status: "error", error_code: null });
    // An error answer's code 0 (no protocol code, but what an actor may send) is kept as 0.
    const zero = new SpanBatch("{}");
    zero.handled(request("z"), 1, 1, 1, 0, undefined);
    expect(decodeSpans(zero.take())[0]).toMatchObject({ status: "error", error_code: 0 });
    expect(sent).toEqual({ ts: sent!.ts, actor: "gateway", event: "sent", type: "request", trace_id: "t7u8v9", message_id: env.message_id, parent_span_id: "00f067aa0ba902b7", to: ["calc#0", "calc#1"], capability: "calc" });
  });

  test("a reader goes from batch to batch by their lengths: a cut last batch waits; damaged bytes are skipped to the next batch; a sender's strings never start one", () => {
    const first = batchOf("first", 3);
    const cut = batchOf("cut", 5);
    const last = batchOf("last", 2);
    for (let at = 1; at < cut.length; at += 37) {
      // Cut short at the very end (a killed writer, or one still writing): what came before it is read.
      expect(decodeSpans(Buffer.concat([first, cut.subarray(0, at)])).map((e) => e.trace_id)).toEqual(["first", "first", "first"]);
    }
    // Bytes that are no batch (damaged on disk) between two batches, and before the first.
    expect(decodeSpans(Buffer.concat([Buffer.from("junk before"), first, Buffer.from("damaged bytes"), last])).map((e) => e.trace_id)).toEqual(["first", "first", "first", "last", "last"]);
    // Only the batches holding the trace id's bytes are decoded, and only its records returned.
    expect(decodeSpans(Buffer.concat([first, last]), "last")).toHaveLength(2);
    expect(decodeSpans(Buffer.from("no batch at all"))).toEqual([]);
    // A type that is the magic's tail and a whole forged batch: after its string's length (whose top
    // byte is 0) it spells a magic inside a whole batch, which nobody looks for: nothing lost, nothing forged.
    const forged = batchOf("forged", 1).subarray(SPAN_BATCH_MAGIC.length).toString("latin1");
    const tricky = new SpanBatch("{}");
    for (let i = 0; i < 3; i++) tricky.handled(request(`m${i}`), i, 1, 1, undefined, undefined);
    tricky.handled({ ...request("evil"), message_type: `HSPANS\u0002${forged}` } as unknown as Envelope, 9, 1, 1, undefined, undefined);
    expect(decodeSpans(Buffer.concat([first, tricky.take(), last])).map((e) => `${e.actor ?? ""}:${e.trace_id}`)).toEqual([
      "a:first", "a:first", "a:first", ":m0", ":m1", ":m2", ":evil", "a:last", "a:last",
    ]);
  });
});

describe("EventLog's span file", () => {
  test("records go to <name>.spans beside the JSON lines; readEvents merges both by time; the span file rotates to .1.spans", async () => {
    using dir = tempDir();
    const path = join(dir.path, "logs", "echo.0.jsonl");
    const log = new EventLog(path, { actor: "echo#0" }, { rotateBytes: 4000 });
    log.write({ event: "started" });
    const env = request("trace-a");
    for (let i = 0; i < 40; i++) log.handled(env, Date.now(), 0.1, 1, undefined);
    log.flush();
    expect(spansPathOf(path)).toBe(join(dir.path, "logs", "echo.0.spans"));
    // Over 4,000 bytes of records: rotated whole, the next ones in a fresh file.
    expect(decodeSpans(readFileSync(join(dir.path, "logs", "echo.0.1.spans")))).toHaveLength(40);
    log.handled(env, Date.now(), 0.1, 1, 8);
    log.sent(env, ["calc#0"]);
    log.write({ event: "stopped" });
    await log.close();
    const events = readEvents(path);
    // Both files, oldest first (lines and records of the same millisecond in either order).
    expect(events.map((e) => e.event).sort()).toEqual(["handled", "sent", "started", "stopped"]);
    expect(events.map((e) => Number(e.ts))).toEqual(events.map((e) => Number(e.ts)).sort((a, b) => a - b));
    expect(events.find((e) => e.event === "handled")).toMatchObject({ actor: "echo#0", trace_id: "trace-a", status: "error", error_code: 8 });
    // The JSON file holds only the JSON lines.
    expect(readFileSync(path, "utf8")).not.toContain("handled");
  });

  test("a member that handles nothing makes no span file", async () => {
    using dir = tempDir();
    const path = join(dir.path, "quiet.jsonl");
    const log = new EventLog(path, { actor: "quiet" });
    log.write({ event: "started" });
    await log.close();
    expect(() => readFileSync(spansPathOf(path))).toThrow();
    expect(readEvents(path).map((e) => e.event)).toEqual(["started"]);
  });

  test("readTrace and findTrace take spans from span files: across 1 MiB chunk edges, a batch bigger than a chunk, a torn batch, rotated files", async () => {
    using dir = tempDir();
    const logs = join(dir.path, "logs");
    const log = new EventLog(join(logs, "worker.jsonl"), { actor: "worker" });
    const wanted = request("wanted-trace");
    // About 3 MB of other traces' records, with the wanted trace's records spread among them.
    for (let i = 0; i < 20_000; i++) {
      log.handled(i % 4000 === 0 ? wanted : request(`other-${i}`, "x".repeat(100)), 1000 + i, 0.5, 1, undefined);
      if (i % 3000 === 0) log.flush();
    }
    // One record of 1.5 MB (its own batch is bigger than a chunk).
    log.handled(request("wanted-trace", "y".repeat(1_500_000)), 50_000, 0.5, 1, undefined);
    await log.close();
    // A writer killed mid-batch: its successor sets the file aside (killed.1.spans, read up to the cut) and starts a new one.
    const whole = new SpanBatch(JSON.stringify({ actor: "killed" }));
    whole.handled(request("wanted-trace"), 60_000, 1, 1, undefined, undefined);
    const cutShort = new SpanBatch(JSON.stringify({ actor: "killed" }));
    cutShort.handled(request("wanted-trace"), 65_000, 1, 1, undefined, undefined);
    const cut = Buffer.from(cutShort.take());
    writeFileSync(join(logs, "killed.spans"), Buffer.concat([whole.take(), cut.subarray(0, cut.length - 5)]));
    const successor = new EventLog(join(logs, "killed.jsonl"), { actor: "killed" });
    successor.handled(request("wanted-trace"), 70_000, 1, 1, undefined, undefined);
    await successor.close();
    expect(decodeSpans(readFileSync(join(logs, "killed.spans"))).map((e) => e.started_at)).toEqual([70_000]);
    const expected = [1000, 5000, 9000, 13_000, 17_000, 50_000, 60_000, 70_000];
    const starts = (spans: { started_at: number }[]) => spans.map((s) => s.started_at).sort((a, b) => a - b);
    expect(starts(readTrace(dir.path, "wanted-trace"))).toEqual(expected);
    const found = await findTrace(dir.path, "wanted-trace");
    expect(found.truncated).toBe(false);
    expect(starts(found.spans)).toEqual(expected);
  });
});
