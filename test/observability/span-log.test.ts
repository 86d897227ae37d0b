import { describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../mesh/logger.ts";
import { createEvent, createRequest, type Envelope } from "../../mesh/envelope.ts";
import { EventLog, readEvents, spansPathOf } from "../../src/observability/event-log.ts";
import { decodeSpans, SpanBatch, SPAN_BATCH_MAGIC } from "../../src/observability/span-log.ts";
import { spanIdOf } from "../../src/observability/trace-context.ts";
import { findTrace, readTrace } from "../../src/observability/trace-tree.ts";
import { diskKinds, injectInto, openDisk } from "../disk-full.ts";
import { tempDir } from "../helpers.ts";

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
    expect(sent).toEqual({ ts: sent!.ts, actor: "gateway", event: "sent", type: "request", trace_id: "t7u8v9", message_id: env.message_id, parent_span_id: "00f067aa0ba902b7", to: ["calc#0", "calc#1"], capability: "calc" });
  });

  test("a batch cut short by a killed writer is skipped, whatever follows it; garbage before the first batch too; an unfinished last batch waits", () => {
    const batchOf = (trace: string, n: number) => {
      const batch = new SpanBatch(JSON.stringify({ actor: "a" }));
      for (let i = 0; i < n; i++) batch.handled(request(trace), i, 1, 1, undefined, undefined);
      return Buffer.from(batch.take());
    };
    const first = batchOf("first", 3);
    const torn = batchOf("torn", 5);
    const last = batchOf("last", 2);
    for (let cut = 1; cut < torn.length; cut += 37) {
      const file = Buffer.concat([Buffer.from("junk before"), first, torn.subarray(0, cut), last]);
      expect(decodeSpans(file).map((e) => e.trace_id)).toEqual(["first", "first", "first", "last", "last"]);
      // Cut short at the very end (or still being written): what came before it is read.
      expect(decodeSpans(Buffer.concat([first, torn.subarray(0, cut)])).map((e) => e.trace_id)).toEqual(["first", "first", "first"]);
    }
    // Only the batches holding the trace id's bytes are decoded, and only its records returned.
    expect(decodeSpans(Buffer.concat([first, last]), "last")).toHaveLength(2);
    expect(decodeSpans(Buffer.from("no batch at all"))).toEqual([]);
    // A sender's string holding the magic cannot make a batch look torn: it is written defused.
    const tricky = new SpanBatch("{}");
    tricky.handled(request(`evil${SPAN_BATCH_MAGIC.toString("latin1")}trace`), 1, 1, 1, undefined, undefined);
    expect(decodeSpans(Buffer.concat([first, tricky.take(), last])).map((e) => e.trace_id)).toEqual(["first", "first", "first", "evil\ufffdHSPANS\u0001trace", "last", "last"]);
  });
});

describe("EventLog's span file", () => {
  test("records go to <name>.spans beside the JSON lines; readEvents merges both by time; the span file rotates to .1.spans", async () => {
    using dir = tempDir();
    const path = join(dir.path, "logs", "echo.0.jsonl");
    const log = new EventLog(path, { actor: "echo#0" }, { rotateBytes: 4000 });
    log.write({ event: "started" });
    const env = request("trace-a");
    for (let i = 0; i < 40; i++) log.handled(env, Date.now(), 0.1, 1, undefined, undefined);
    log.flush();
    expect(spansPathOf(path)).toBe(join(dir.path, "logs", "echo.0.spans"));
    // Over 4,000 bytes of records: rotated whole, the next ones in a fresh file.
    expect(decodeSpans(readFileSync(join(dir.path, "logs", "echo.0.1.spans")))).toHaveLength(40);
    log.handled(env, Date.now(), 0.1, 1, 8, undefined);
    log.sent(env, ["calc#0"], undefined);
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
      log.handled(i % 4000 === 0 ? wanted : request(`other-${i}`, "x".repeat(100)), 1000 + i, 0.5, 1, undefined, undefined);
      if (i % 3000 === 0) log.flush();
    }
    // One record of 1.5 MB (its own batch is bigger than a chunk).
    log.handled(request("wanted-trace", "y".repeat(1_500_000)), 50_000, 0.5, 1, undefined, undefined);
    await log.close();
    // A killed writer's torn batch in the middle of a second file, and a rotated one read too.
    const tornBatch = new SpanBatch(JSON.stringify({ actor: "killed" }));
    tornBatch.handled(request("wanted-trace"), 60_000, 1, 1, undefined, undefined);
    const whole = new SpanBatch(JSON.stringify({ actor: "killed" }));
    whole.handled(request("wanted-trace"), 70_000, 1, 1, undefined, undefined);
    const torn = Buffer.from(tornBatch.take());
    writeFileSync(join(logs, "killed.1.spans"), Buffer.concat([torn.subarray(0, torn.length - 5), whole.take()]));
    appendFileSync(join(logs, "killed.1.spans"), SPAN_BATCH_MAGIC.subarray(0, 3));
    const expected = [1000, 5000, 9000, 13_000, 17_000, 50_000, 70_000];
    const starts = (spans: { started_at: number }[]) => spans.map((s) => s.started_at).sort((a, b) => a - b);
    expect(starts(readTrace(dir.path, "wanted-trace"))).toEqual(expected);
    const found = await findTrace(dir.path, "wanted-trace");
    expect(found.truncated).toBe(false);
    expect(starts(found.spans)).toEqual(expected);
  });
});

/** A logger that keeps its lines, to see what an event log warns about. */
function capture() {
  const lines: Array<Record<string, unknown>> = [];
  return { lines, log: createLogger({}, (line) => lines.push(JSON.parse(line))) };
}

for (const { kind, skip } of diskKinds()) {
  describe.skipIf(skip !== undefined)(`EventLog's span file on a full disk (${kind}${skip ? `; skipped: ${skip}` : ""})`, () => {
    test("records it cannot write are dropped and counted, whole batches only; the JSON file says how many once writing works again", async () => {
      using disk = openDisk(kind);
      const path = join(disk.dir, "logs", "echo.jsonl");
      const warnings = capture();
      let log: EventLog;
      {
        using _ = injectInto(disk);
        log = new EventLog(path, { actor: "echo" }, { log: warnings.log });
      }
      const env = request("t", "s".repeat(400));
      log.handled(env, 1, 1, 1, undefined, undefined);
      log.flush();
      disk.fill();
      for (let i = 2; i <= 60; i++) {
        log.handled(env, i, 1, 1, undefined, undefined);
        if (i % 10 === 0) log.flush();
      }
      log.flush();
      expect(log.dropped).toBeGreaterThan(0);
      expect(warnings.lines.filter((l) => l.msg === "event log cannot write: dropping lines until it can")).toHaveLength(1);
      disk.free();
      log.handled(env, 61, 1, 1, undefined, undefined);
      log.flush();
      await log.close();
      const records = decodeSpans(readFileSync(spansPathOf(path)));
      // Nothing half written: every record read back is whole, and the lost ones are exactly those counted.
      expect(records.length).toBe(61 - log.dropped);
      expect(records.at(-1)).toMatchObject({ started_at: 61 });
      expect(readEvents(path).find((e) => e.event === "log_dropped")).toMatchObject({ actor: "echo", dropped: log.dropped });
      expect(warnings.lines.find((l) => l.msg === "event log writing again")).toMatchObject({ dropped: log.dropped });
    });
  });
}
