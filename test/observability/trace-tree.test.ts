import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readTrace, renderTrace } from "../../src/observability/trace-tree.ts";
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

  test("a trace with no spans says so", () => {
    using dir = tempDir();
    expect(readTrace(dir.path, "nothing")).toEqual([]);
    expect(renderTrace("nothing", [])).toBe("trace nothing: no spans found");
  });
});
