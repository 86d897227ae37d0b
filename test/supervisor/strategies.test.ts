/**
 * Start order, reverse stop order, and which children each strategy restarts in which order,
 * with real fixture processes crashed by a real SIGKILL.
 */
import { describe, expect, test } from "bun:test";
import type { SupervisorEvent } from "../../src/supervisor/supervisor-events.ts";
import { alive, Harness } from "./supervisor-harness.ts";

const names = (events: SupervisorEvent[], type: SupervisorEvent["type"]) =>
  events.filter((e) => e.type === type && e.child !== undefined).map((e) => e.child);

describe("Supervisor order and strategies", () => {
  test("starts children in order and stops them in reverse order", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", children: [h.child("a"), h.child("b"), h.child("c")] });
    await sup.start();
    expect(h.trace()).toEqual(["up a", "up b", "up c"]);
    expect(names(h.events, "started")).toEqual(["a", "b", "c"]);
    const pids = sup.status().map((s) => s.pid!);
    expect(sup.status().map((s) => s.state)).toEqual(["running", "running", "running"]);

    await sup.stop();
    expect(h.trace(3)).toEqual(["down c", "down b", "down a"]);
    expect(names(h.events, "stopped")).toEqual(["c", "b", "a"]);
    expect(sup.status().map((s) => s.state)).toEqual(["stopped", "stopped", "stopped"]);
    expect(sup.state).toBe("stopped");
    expect(await sup.exited).toEqual({ code: 0, signal: null, reason: "shutdown" });
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });

  test("one_for_one restarts just the crashed child", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", strategy: "one_for_one", children: [h.child("a"), h.child("b"), h.child("c")] });
    await sup.start();
    const [a, b, c] = sup.status().map((s) => s.pid!);

    process.kill(b!, "SIGKILL");
    const newB = await h.upCount("b", 2);
    await h.event((e) => e.type === "restarted", "restarted");
    expect(newB).not.toBe(b);
    expect(h.trace(3)).toEqual(["up b"]);
    const status = sup.status();
    expect(status.map((s) => s.pid)).toEqual([a!, newB, c!]);
    expect(status.map((s) => s.restarts)).toEqual([0, 1, 0]);
    expect(status[1]!.lastExit).toMatchObject({ code: null, signal: "SIGKILL" });
    const exited = h.events.find((e) => e.type === "exited");
    expect(exited).toMatchObject({ child: "b", pid: b, normal: false, willRestart: true });
    expect(h.events.find((e) => e.type === "restarting")).toMatchObject({ child: "b", children: ["b"] });
  });

  test("one_for_all stops the others in reverse order and restarts all in order", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", strategy: "one_for_all", children: [h.child("a"), h.child("b"), h.child("c")] });
    await sup.start();
    const before = h.events.length;
    process.kill(sup.status()[1]!.pid!, "SIGKILL");
    await h.event((e) => e.type === "restarted", "restarted", before);

    expect(h.trace(3)).toEqual(["down c", "down a", "up a", "up b", "up c"]);
    const after = h.events.slice(before);
    expect(names(after, "stopped")).toEqual(["c", "a"]);
    expect(after.filter((e) => e.type === "stopped").every((e) => e.type === "stopped" && e.reason === "sibling_restart")).toBe(true);
    expect(names(after, "started")).toEqual(["a", "b", "c"]);
    expect(after.find((e) => e.type === "restarting")).toMatchObject({ child: "b", children: ["a", "b", "c"] });
    expect(sup.status().map((s) => s.restarts)).toEqual([1, 1, 1]);
    expect(sup.status().map((s) => s.pid)).toEqual(["a", "b", "c"].map((n) => h.pids(n)[1]));
  });

  test("rest_for_one restarts the crashed child and those after it, not those before", async () => {
    await using h = new Harness();
    const children = ["a", "b", "c", "d"].map((n) => h.child(n));
    const sup = h.supervisor({ id: "root", strategy: "rest_for_one", children });
    await sup.start();
    const a = sup.status()[0]!.pid!;
    const before = h.events.length;
    process.kill(sup.status()[1]!.pid!, "SIGKILL");
    await h.event((e) => e.type === "restarted", "restarted", before);

    expect(h.trace(4)).toEqual(["down d", "down c", "up b", "up c", "up d"]);
    const after = h.events.slice(before);
    expect(names(after, "stopped")).toEqual(["d", "c"]);
    expect(names(after, "started")).toEqual(["b", "c", "d"]);
    expect(sup.status()[0]!.pid).toBe(a);
    expect(sup.status().map((s) => s.restarts)).toEqual([0, 1, 1, 1]);
  });

  test("one_for_all stops a temporary sibling but does not restart it", async () => {
    await using h = new Harness();
    const sup = h.supervisor({
      id: "root",
      strategy: "one_for_all",
      children: [h.child("a"), h.child("t", { restart: "temporary" }), h.child("c")],
    });
    await sup.start();
    process.kill(sup.status()[2]!.pid!, "SIGKILL");
    await h.event((e) => e.type === "restarted", "restarted");
    expect(h.trace(3)).toEqual(["down t", "down a", "up a", "up c"]);
    expect(sup.status().map((s) => s.state)).toEqual(["running", "stopped", "running"]);
  });

  test("events are readable as an async iterator that ends with the supervisor", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", children: [h.child("a"), h.child("b")] });
    const seen: string[] = [];
    const reading = (async () => {
      for await (const e of sup.events()) seen.push(e.child ? `${e.type} ${e.child}` : e.type);
    })();
    await sup.start();
    await sup.stop();
    await reading;
    expect(seen).toEqual(["started a", "started b", "stopped b", "stopped a", "stopped"]);
  });
});
