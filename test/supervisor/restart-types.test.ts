/**
 * permanent / transient / temporary, with real processes exiting normally (SIGUSR2 → exit 0),
 * abnormally (SIGUSR1 → exit 1) and killed with SIGKILL.
 */
import { describe, expect, test } from "bun:test";
import type { SupervisorEvent } from "../../src/supervisor/supervisor-events.ts";
import { waitFor } from "../helpers.ts";
import { Harness } from "./supervisor-harness.ts";

type Exited = Extract<SupervisorEvent, { type: "exited" }>;
const isExited = (child: string) => (e: SupervisorEvent): e is Exited => e.type === "exited" && e.child === child;

describe("restart types", () => {
  test("permanent: restarted even after a normal exit", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", intensity: 5, children: [h.child("p")] });
    await sup.start();
    process.kill(sup.status()[0]!.pid!, "SIGUSR2");
    await h.upCount("p", 2);
    expect(h.events.find(isExited("p"))).toMatchObject({ exit: { code: 0, signal: null }, normal: true, willRestart: true });
    await waitFor(() => sup.status()[0]!.state === "running", "p running again");
    expect(sup.status()[0]!.restarts).toBe(1);
  });

  test("transient: a normal exit (code 0) is not restarted", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", children: [h.child("t", { restart: "transient" }), h.child("b")] });
    await sup.start();
    process.kill(sup.status()[0]!.pid!, "SIGUSR2");
    const exited = await h.event(isExited("t"), "t exited");
    expect(exited).toMatchObject({ exit: { code: 0, signal: null }, normal: true, willRestart: false });
    expect(sup.status()[0]).toMatchObject({ state: "exited", restarts: 0, lastExit: { code: 0 } });
    // A later event proves the supervisor went on without restarting t: stopping it now.
    await sup.stop();
    expect(h.pids("t")).toHaveLength(1);
    expect(h.events.some((e) => e.type === "restarting")).toBe(false);
  });

  test("transient: a crash (SIGKILL) and a non-zero exit are restarted", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", intensity: 5, children: [h.child("t", { restart: "transient" })] });
    await sup.start();
    process.kill(sup.status()[0]!.pid!, "SIGKILL");
    const second = await h.upCount("t", 2);
    await waitFor(() => sup.status()[0]!.pid === second, "t running again");
    process.kill(second, "SIGUSR1");
    await h.upCount("t", 3);
    const exits = h.events.filter(isExited("t"));
    expect(exits.map((e) => [e.exit.code, e.exit.signal, e.normal, e.willRestart])).toEqual([
      [null, "SIGKILL", false, true],
      [1, null, false, true],
    ]);
    await waitFor(() => sup.status()[0]!.restarts === 2, "two restarts counted");
  });

  test("temporary: never restarted, even after a crash; siblings are untouched", async () => {
    await using h = new Harness();
    const sup = h.supervisor({ id: "root", strategy: "one_for_all", children: [h.child("a"), h.child("tmp", { restart: "temporary" })] });
    await sup.start();
    const a = sup.status()[0]!.pid;
    process.kill(sup.status()[1]!.pid!, "SIGKILL");
    expect(await h.event(isExited("tmp"), "tmp exited")).toMatchObject({ normal: false, willRestart: false });
    expect(sup.status()[1]).toMatchObject({ state: "exited", restarts: 0 });
    await sup.stop();
    expect(h.trace()).toEqual(["up a", "up tmp", "down a"]);
    expect(sup.status()[0]!.restarts).toBe(0);
    expect(h.events.find((e) => e.type === "stopped" && e.child === "a")).toMatchObject({ pid: a });
  });
});
