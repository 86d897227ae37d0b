/**
 * Shutdown timeouts, brutal_kill, killing a supervisor, and the operator calls killChild
 * (hung-actor handling) and restartChild, with real processes.
 */
import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../mesh/errors.ts";
import type { SupervisorEvent } from "../../src/supervisor/supervisor-events.ts";
import { waitFor } from "../helpers.ts";
import { alive, Harness } from "./supervisor-harness.ts";

type Stopped = Extract<SupervisorEvent, { type: "stopped" }>;
const stopOf = (events: SupervisorEvent[], child: string) =>
  events.find((e): e is Stopped => e.type === "stopped" && e.child === child);

describe("shutdown", () => {
  test("a child ignoring SIGTERM is SIGKILLed after its shutdown ms; a polite one exits by itself", async () => {
    await using h = new Harness();
    const sup = h.supervisor({
      id: "root",
      children: [h.child("polite", { shutdown: 5000 }), h.child("hung", { shutdown: 300, flags: ["ignore-term"] })],
    });
    await sup.start();
    const started = performance.now();
    await sup.stop();
    const elapsed = performance.now() - started;

    expect(h.trace()).toEqual(["up polite", "up hung", "term-ignored hung", "down polite"]);
    expect(stopOf(h.events, "hung")!.exit).toMatchObject({ code: null, signal: "SIGKILL" });
    expect(stopOf(h.events, "polite")!.exit).toMatchObject({ code: 0, signal: null });
    expect(elapsed).toBeGreaterThanOrEqual(290); // the hung child had its full 300 ms
  });

  test("brutal_kill kills at once, without SIGTERM", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", children: [h.child("b", { shutdown: "brutal_kill" })] });
    await sup.start();
    await sup.stop();
    expect(h.trace()).toEqual(["up b"]);
    expect(stopOf(h.events, "b")!.exit).toMatchObject({ code: null, signal: "SIGKILL" });
  });

  test("kill() cuts short a stop that is waiting for a hung child", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", children: [h.child("a"), h.child("hung", { shutdown: 60_000, flags: ["ignore-term"] })] });
    await sup.start();
    const stopping = sup.stop();
    await waitFor(() => h.trace().includes("term-ignored hung"), "hung got SIGTERM");
    await sup.kill();
    await stopping;
    expect(stopOf(h.events, "hung")!.exit.signal).toBe("SIGKILL");
    expect(stopOf(h.events, "a")!.exit.signal).toBe("SIGKILL"); // killed too, never asked politely
    expect(h.trace()).toEqual(["up a", "up hung", "term-ignored hung"]);
    expect(await sup.exited).toEqual({ code: null, signal: "SIGKILL", reason: "killed" });
  });
});

describe("operator calls", () => {
  test("killChild of a hung child: SIGKILL, then restarted exactly like a crash", async () => {
    await using h = new Harness();
    const sup = h.supervisor({
      id: "root",
      children: [h.child("a"), h.child("hung", { restart: "transient", flags: ["ignore-term"] })],
    });
    await sup.start();
    const [a, hung] = sup.status().map((s) => s.pid!);
    await sup.killChild("hung");
    expect(alive(hung!)).toBe(false);
    const second = await h.upCount("hung", 2);
    await waitFor(() => sup.status()[1]!.pid === second, "hung running again");
    const exited = h.events.find((e) => e.type === "exited");
    expect(exited).toMatchObject({ child: "hung", pid: hung, exit: { signal: "SIGKILL" }, normal: false, willRestart: true });
    expect(sup.status().map((s) => [s.pid, s.restarts])).toEqual([[a, 0], [second, 1]]);
  });

  test("killChild counts against the intensity like any crash", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", intensity: 1, children: [h.child("w")] });
    await sup.start();
    await sup.killChild("w");
    await h.upCount("w", 2);
    await waitFor(() => sup.status()[0]!.state === "running", "w running again");
    await sup.killChild("w");
    expect(await sup.exited).toMatchObject({ reason: "reached_max_restart_intensity" });
  });

  test("killChild and restartChild refuse unknown or stopped children", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", children: [h.child("a", { restart: "temporary" })] });
    await sup.start();
    await expect(sup.killChild("nope")).rejects.toMatchObject({ code: ErrorCode.UNROUTABLE, fields: { known: ["a"] } });
    await sup.killChild("a");
    await waitFor(() => sup.status()[0]!.state === "exited", "a exited");
    await expect(sup.killChild("a")).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE });
    await sup.stop();
    await expect(sup.restartChild("a")).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE });
  });

  test("restartChild stops politely and starts again without counting against the intensity", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", intensity: 0, children: [h.child("a"), h.child("b", { restart: "temporary" })] });
    await sup.start();
    await sup.restartChild("a");
    await sup.restartChild("a");
    await sup.restartChild("b"); // a running temporary child too
    expect(h.trace()).toEqual(["up a", "up b", "down a", "up a", "down a", "up a", "down b", "up b"]);
    expect(sup.state).toBe("running");
    expect(sup.status().map((s) => [s.state, s.restarts])).toEqual([["running", 0], ["running", 0]]);
    expect(h.events.filter((e) => e.type === "stopped").map((e) => e.type === "stopped" && e.reason)).toEqual(["operator", "operator", "operator"]);
  });
});
