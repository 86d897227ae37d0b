/**
 * Restart intensity and escalation: a supervisor that restarts too often stops its children in
 * reverse order and ends; a parent sees that as a crash of the child supervisor.
 */
import { describe, expect, test } from "bun:test";
import { HermesError, ErrorCode } from "../../mesh/errors.ts";
import type { ChildSpec } from "../../src/supervisor/child-spec.ts";
import { processChild } from "../../src/supervisor/process-child.ts";
import { supervisorChild } from "../../src/supervisor/supervisor-child.ts";
import type { SupervisorEvent } from "../../src/supervisor/supervisor-events.ts";
import { alive, Harness } from "./supervisor-harness.ts";

const GAVE_UP = { code: 1, signal: null, reason: "reached_max_restart_intensity" };
const of = (supervisor: string, type: SupervisorEvent["type"]) => (e: SupervisorEvent) =>
  e.supervisor === supervisor && e.type === type;

describe("restart intensity and escalation", () => {
  test("a root exceeding its intensity stops its children in reverse order and reports it", async () => {
    await using h = new Harness();
    const sup = h.supervisor({
      id: "root",
      intensity: 2,
      period: 5000,
      children: [h.child("a"), h.child("crashy", { flags: ["exit=1"] }), h.child("c")],
    });
    await sup.start();
    expect(await sup.exited).toEqual(GAVE_UP);

    // Two restarts are allowed, the third crash is one too many.
    expect(h.trace()).toEqual(["up a", "up crashy", "up c", "up crashy", "up crashy", "down c", "down a"]);
    expect(h.events.filter(of("root", "restarting"))).toHaveLength(2);
    expect(h.events.find(of("root", "intensity_exceeded"))).toMatchObject({ child: "crashy", intensity: 2, period: 5000 });
    const stops = h.events.filter(of("root", "stopped"));
    expect(stops.map((e) => [e.child, e.type === "stopped" && e.reason])).toEqual([
      ["c", "max_restart_intensity"],
      ["a", "max_restart_intensity"],
      [undefined, "reached_max_restart_intensity"],
    ]);
    expect(sup.state).toBe("stopped");
    expect(sup.status().map((s) => s.state)).toEqual(["stopped", "exited", "stopped"]);
  });

  test("a child supervisor that gives up is restarted by its parent, and its children come back", async () => {
    await using h = new Harness();
    const inner = supervisorChild({ id: "inner", intensity: 1, period: 5000, children: [h.child("x"), h.child("y")], onEvent: h.record });
    const root = h.supervisor({ id: "root", intensity: 3, children: [inner, h.child("z")] });
    await root.start();
    const [x1, y1] = [h.pids("x")[0]!, h.pids("y")[0]!];
    const z = h.pids("z")[0]!;

    process.kill(y1, "SIGKILL"); // 1 restart in 5 s: allowed
    await h.event(of("inner", "restarted"), "inner restarted y");
    process.kill(h.pids("y")[1]!, "SIGKILL"); // 2nd: inner gives up
    await h.event(of("root", "restarted"), "root restarted inner");

    expect(h.trace()).toEqual(["up x", "up y", "up z", "up y", "down x", "up x", "up y"]);
    expect(h.events.find(of("root", "exited"))).toMatchObject({ child: "inner", exit: GAVE_UP, normal: false, willRestart: true });
    expect(h.events.filter(of("inner", "intensity_exceeded"))).toHaveLength(1);
    expect(alive(x1)).toBe(false);
    const [innerStatus, zStatus] = root.status();
    expect(innerStatus).toMatchObject({ id: "inner", type: "supervisor", state: "running", restarts: 1 });
    expect(innerStatus!.children!.map((c) => [c.id, c.state, c.pid])).toEqual([
      ["x", "running", h.pids("x")[1]],
      ["y", "running", h.pids("y")[2]],
    ]);
    expect(zStatus).toMatchObject({ pid: z, restarts: 0 });
  });

  test("escalation goes on up: a parent with intensity 0 gives up too", async () => {
    await using h = new Harness();
    const inner = supervisorChild({ id: "inner", intensity: 0, children: [h.child("x")], onEvent: h.record });
    const root = h.supervisor({ id: "root", intensity: 0, children: [h.child("first"), inner] });
    await root.start();
    process.kill(h.pids("x")[0]!, "SIGKILL");
    expect(await root.exited).toEqual(GAVE_UP);
    expect(h.trace()).toEqual(["up first", "up x", "down first"]);
    expect(h.events.filter((e) => e.type === "intensity_exceeded").map((e) => e.supervisor)).toEqual(["inner", "root"]);
  });

  test("a child failing to start in start(): the started ones stop in reverse order and start() rejects", async () => {
    await using h = new Harness();
    const bad: ChildSpec = { id: "bad", start: processChild(["/nonexistent/hermes-child"]) };
    const sup = h.supervisor({ id: "root", children: [h.child("a"), h.child("b"), bad, h.child("c")] });
    const error = await sup.start().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(HermesError);
    expect(error).toMatchObject({ code: ErrorCode.UNAVAILABLE, fields: { reason: "failed_to_start_child", child: "bad" } });
    expect(h.trace()).toEqual(["up a", "up b", "down b", "down a"]);
    expect(await sup.exited).toMatchObject({ code: 1, reason: "failed_to_start_child" });
  });

  test("a child failing to restart counts as another restart against the intensity", async () => {
    await using h = new Harness();
    let starts = 0;
    const fixture = h.child("flaky");
    const flaky: ChildSpec = {
      id: "flaky",
      start: () => (++starts === 1 ? fixture.start() : Promise.reject(new Error("no more"))),
    };
    const sup = h.supervisor({ id: "root", intensity: 2, children: [h.child("a"), flaky] });
    await sup.start();
    process.kill(h.pids("flaky")[0]!, "SIGKILL");
    expect(await sup.exited).toEqual(GAVE_UP);
    expect(starts).toBe(3); // the first start, then two failed restarts; a third would exceed 2
    expect(h.events.filter(of("root", "restarting"))).toHaveLength(2);
    expect(h.trace()).toEqual(["up a", "up flaky", "down a"]);
    expect(sup.status()[1]).toMatchObject({ state: "exited", lastExit: { reason: "failed to start: no more" } });
  });
});
