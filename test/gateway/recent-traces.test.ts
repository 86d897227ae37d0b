/** The dashboard's recent traces: the last `capacity` requests, newest first, for any capacity and any count. */
import { expect, test } from "bun:test";
import { RecentTraces, type TraceSummary } from "../../src/gateway/recent-traces.ts";

test("keeps the last `capacity` requests, newest first, through the ring's wrap-arounds", () => {
  for (const capacity of [0, 1, 2, 3, 50]) {
    const recent = new RecentTraces(capacity);
    const model: string[] = [];
    for (let i = 0; i < 200; i++) {
      recent.add({ trace_id: `t${i}`, at: i, route: "request", target: "echo", duration_ms: 1, status: "ok" } satisfies TraceSummary);
      model.unshift(`t${i}`);
      if (model.length > capacity) model.length = capacity;
      expect(recent.list().map((item) => item.trace_id)).toEqual(model);
    }
  }
});
