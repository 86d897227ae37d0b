/** Capability routing learns from outcomes: a failing instance is skipped once its circuit opens. */
import { describe, expect, test } from "bun:test";
import { startTestMesh } from "./mesh-harness.ts";

describe("scheduling by outcome", () => {
  test("after repeated failures of one pool instance, capability requests go (almost) only to the healthy one", async () => {
    await using t = await startTestMesh(`
mesh:
  name: sched
supervisor:
  children:
    - actor: flaky
      module: {FIXTURES}/flaky.ts
      pool: 2
`);
    const before = process.env.HERMES_SCHEDULER;
    process.env.HERMES_SCHEDULER = "weighted";
    const client = await t.client();
    if (before === undefined) delete process.env.HERMES_SCHEDULER;
    else process.env.HERMES_SCHEDULER = before;
    const outcomes: string[] = [];
    for (let i = 0; i < 60; i++) {
      const reply = await client.request({ capability: "flaky" }, {}).then((r) => String(r.payload.address), (e) => `error ${e.code}`);
      outcomes.push(reply);
    }
    const failures = outcomes.filter((o) => o === "error 7").length;
    expect(failures).toBeGreaterThanOrEqual(1); // it did try the broken one
    expect(failures).toBeLessThanOrEqual(6); // ... until its circuit opened (5 consecutive failures)
    // The weighted strategy still probes a failing instance now and then (until its circuit opens
    // at 5 consecutive failures), but the traffic has moved: without outcomes it would be half.
    expect(outcomes.slice(-40).filter((o) => o === "flaky#0").length).toBeGreaterThanOrEqual(38);
  }, 30_000);
});
