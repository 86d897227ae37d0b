import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { findTrace, readTrace, renderTrace, type Span } from "../../src/observability/trace-tree.ts";
import { tempDir } from "../helpers.ts";

const line = (fields: Record<string, unknown>) => `${JSON.stringify({ event: "handled", status: "ok", type: "request", ...fields })}\n`;

describe("trace tree", () => {
  test("spans from several logs are linked to their parents, ordered by time, other traces ignored", () => {
    using dir = tempDir();
    mkdirSync(join(dir.path, "logs"));
    writeFileSync(join(dir.path, "logs", "gateway.jsonl"), line({ actor: "gateway", trace_id: "T", span_id: "a", started_at: 1000, duration_ms: 9, message_id: "m0" }));
    writeFileSync(
      join(dir.path, "logs", "planner.jsonl"),
      line({ actor: "planner", trace_id: "T", span_id: "b", parent_span_id: "a", started_at: 1001, duration_ms: 7, message_id: "m1" }) +
        line({ actor: "planner", trace_id: "OTHER", span_id: "x", started_at: 1001, duration_ms: 1, message_id: "mx" }) +
        "{torn line of a killed process",
    );
    writeFileSync(
      join(dir.path, "logs", "coder.jsonl"),
      line({ actor: "coder", trace_id: "T", span_id: "d", parent_span_id: "b", started_at: 1005, duration_ms: 2, message_id: "m3", status: "error", error_code: 7 }) +
        line({ actor: "coder", trace_id: "T", span_id: "c", parent_span_id: "b", started_at: 1002, duration_ms: 2, message_id: "m2", attempt: 2 }),
    );
    const roots = readTrace(dir.path, "T");
    expect(roots).toHaveLength(1);
    expect(roots[0]!.actor).toBe("gateway");
    expect(roots[0]!.children.map((s) => s.actor)).toEqual(["planner"]);
    expect(roots[0]!.children[0]!.children.map((s) => s.span_id)).toEqual(["c", "d"]);
    const text = renderTrace("T", roots);
    expect(text.split("\n")[0]).toBe("trace T: 4 span(s) in 3 actor(s), 9.0 ms");
    expect(text).toContain("└─ gateway  request  +0.0 ms  9.0 ms  ok");
    expect(text).toContain("coder  request  +2.0 ms  2.0 ms  ok attempt 2");
    expect(text).toContain("coder  request  +5.0 ms  2.0 ms  error 7");
  });

  test("a trace with no spans says so", async () => {
    using dir = tempDir();
    expect(readTrace(dir.path, "nothing")).toEqual([]);
    expect(await findTrace(dir.path, "nothing")).toMatchObject({ spans: [], truncated: false, scannedBytes: 0 });
    expect(renderTrace("nothing", [])).toBe("trace nothing: no spans found");
  });
});

const MiB = 1024 * 1024;
/** Lines of another trace, `bytes` long, ending in a newline. */
const otherLines = (bytes: number) => {
  const one = line({ actor: "w", trace_id: "OTHER", span_id: "o", started_at: 1, duration_ms: 1, message_id: "mo" });
  const body = one.repeat(Math.floor((bytes - 1) / one.length));
  return body + `${"x".repeat(bytes - body.length - 1)}\n`;
};
const ids = (roots: Span[]): string[] => roots.flatMap((s) => [s.span_id, ...ids(s.children)]);

describe("trace lookups in big logs (readTrace and findTrace read the same way)", () => {
  test("lines across 1 MiB chunk edges, a line longer than a chunk, an overlong line skipped, a last line without newline", async () => {
    using dir = tempDir();
    mkdirSync(join(dir.path, "logs"));
    const at = (span: string, started: number, extra: Record<string, unknown> = {}) => line({ actor: "w", trace_id: "T", span_id: span, started_at: started, duration_ms: 1, message_id: `m-${span}`, ...extra });
    const edge = at("edge", 1);
    const text =
      otherLines(MiB - 10) + edge + // straddles the first chunk's end
      otherLines(MiB) + at("long", 2, { label: "y".repeat(2.5 * MiB) }) + // grows the buffer
      at("huge", 3, { label: "z".repeat(17 * MiB) }) + // past the 16 MiB line limit: skipped
      at("after", 4) + otherLines(MiB) + at("last", 5).trimEnd(); // no final newline
    writeFileSync(join(dir.path, "logs", "w.jsonl"), text);
    const sync = ids(readTrace(dir.path, "T"));
    const lookup = await findTrace(dir.path, "T");
    expect(sync).toEqual(["edge", "long", "after", "last"]);
    expect(ids(lookup.spans)).toEqual(sync);
    expect(lookup.truncated).toBe(false);
    expect(lookup.scannedBytes).toBeGreaterThanOrEqual(Buffer.byteLength(text));
  });

  test("a lookup past its deadline, its span limit or aborted answers with what it has, truncated", async () => {
    using dir = tempDir();
    mkdirSync(join(dir.path, "logs"));
    const spans = Array.from({ length: 50 }, (_, i) => line({ actor: "w", trace_id: "T", span_id: `s${i}`, started_at: i, duration_ms: 1, message_id: `m${i}` }));
    writeFileSync(join(dir.path, "logs", "w.jsonl"), spans.slice(0, 25).join("") + otherLines(3 * MiB) + spans.slice(25).join(""));
    const late = await findTrace(dir.path, "T", { timeoutMs: 0 });
    expect(late).toMatchObject({ truncated: true, reason: "deadline of 0 ms" });
    expect(ids(late.spans).length).toBeLessThan(50);
    const limited = await findTrace(dir.path, "T", { maxSpans: 10 });
    expect(limited).toMatchObject({ truncated: true, reason: "limit of 10 spans" });
    expect(ids(limited.spans)).toEqual(Array.from({ length: 10 }, (_, i) => `s${i}`));
    const aborted = await findTrace(dir.path, "T", { signal: AbortSignal.abort() });
    expect(aborted).toMatchObject({ truncated: true, reason: "aborted", spans: [] });
    const whole = await findTrace(dir.path, "T");
    expect(whole.truncated).toBe(false);
    expect(ids(whole.spans)).toHaveLength(50);
  });
});
