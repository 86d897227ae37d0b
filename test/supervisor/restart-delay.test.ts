/**
 * When a restart waits: a child's first restart after a quiet period is immediate, each further
 * one within the period waits the backoff's next (growing) delay, and the intensity still gives
 * up. Children here are in-process doubles whose crashes the test triggers, so the delays the
 * supervisor chose are exact; nothing is timed.
 */
import { describe, expect, test } from "bun:test";
import { ChildSlot } from "../../src/supervisor/child-slot.ts";
import type { ChildHandle, ChildSpec, ExitInfo } from "../../src/supervisor/child-spec.ts";
import type { SupervisorEvent } from "../../src/supervisor/supervisor-events.ts";
import type { SupervisorOptions } from "../../src/supervisor/supervisor-options.ts";
import { Supervisor } from "../../src/supervisor/supervisor.ts";
import { holdsWithin, waitFor } from "../helpers.ts";

const CRASH: ExitInfo = { code: 1, signal: null, reason: "crashed" };

/** A child double: `crash()` ends its current instance abnormally, `finish()` normally; `starts` counts its starts. */
function double(id: string, restart?: ChildSpec["restart"]): ChildSpec & { crash(): void; finish(): void; starts: number; failNextStart: boolean } {
  let current: ((exit: ExitInfo) => void) | undefined;
  const child = {
    id,
    ...(restart && { restart }),
    starts: 0,
    /** The next start throws (a module that fails to load), once. */
    failNextStart: false,
    crash: () => current?.(CRASH),
    finish: () => current?.({ code: 0, signal: null, reason: "normal" }),
    async start(): Promise<ChildHandle> {
      if (child.failNextStart) {
        child.failNextStart = false;
        throw new Error("cannot start");
      }
      child.starts++;
      const { promise, resolve } = Promise.withResolvers<ExitInfo>();
      current = resolve;
      const stop = () => resolve({ code: 0, signal: null, reason: "normal" });
      return { exited: promise, stop, kill: stop };
    },
  };
  return child;
}

/** A started supervisor with every event it emits recorded. */
async function started(options: SupervisorOptions): Promise<{ sup: Supervisor; events: SupervisorEvent[] }> {
  const sup = new Supervisor(options);
  const events: SupervisorEvent[] = [];
  sup.onEvent((e) => events.push(e));
  await sup.start();
  return { sup, events };
}

/** Crashes `child` twice: the first restart is immediate, the second is decided (and waits its backoff). */
async function crashTwice(child: ReturnType<typeof double>, events: SupervisorEvent[]): Promise<void> {
  const starts = child.starts;
  child.crash();
  await waitFor(() => child.starts === starts + 1, `${child.id} restarted at once`);
  child.crash();
  await waitFor(() => events.filter((e) => e.type === "restarting" && e.child === child.id).length === 2, `${child.id}'s second restart decided`);
}

const delays = (events: SupervisorEvent[]) => events.flatMap((e) => (e.type === "restarting" ? [e.delayMs] : []));

/** The restart events of `child`, in order, as [type, what closed it]. */
const restartStory = (events: SupervisorEvent[], child: string) =>
  events.flatMap((e) => {
    if (e.child !== child) return [];
    if (e.type === "restarting") return [["restarting", e.delayMs]];
    if (e.type === "restarted") return [["restarted", e.children.join(",")]];
    if (e.type === "restart_abandoned") return [["abandoned", e.reason]];
    return [];
  });

describe("restart delay", () => {
  test("a child's first restart is immediate, repeated ones back off, and too many give up", async () => {
    const crashy = double("crashy");
    const { sup, events } = await started({ id: "root", intensity: 3, period: 60_000, backoff: { initialMs: 20, jitter: 0 }, children: [crashy] });
    for (let restart = 1; restart <= 3; restart++) {
      crashy.crash();
      await waitFor(() => crashy.starts === restart + 1, `restart ${restart}`);
    }
    // 0 for the first crash in the period, then initialMs doubling for each repeated one.
    expect(delays(events)).toEqual([0, 20, 40]);
    expect(events.filter((e) => e.type === "restarting").map((e) => e.type === "restarting" && e.recentRestarts)).toEqual([1, 2, 3]);
    // OTP's intensity is untouched: a 4th restart within the period is one too many.
    crashy.crash();
    expect(await sup.exited).toEqual({ code: 1, signal: null, reason: "reached_max_restart_intensity" });
    expect(events.some((e) => e.type === "intensity_exceeded")).toBe(true);
    expect(crashy.starts).toBe(4);
  });

  test("each child has its own: a sibling's crashes do not make another child's first restart wait", async () => {
    const [a, b] = [double("a"), double("b")];
    const { sup, events } = await started({ id: "root", intensity: 10, period: 60_000, backoff: { initialMs: 20, jitter: 0 }, children: [a, b] });
    a.crash();
    await waitFor(() => a.starts === 2, "a restarted");
    a.crash();
    await waitFor(() => a.starts === 3, "a restarted again");
    b.crash();
    await waitFor(() => b.starts === 2, "b restarted");
    expect(events.flatMap((e) => (e.type === "restarting" ? [[e.child, e.delayMs]] : []))).toEqual([["a", 0], ["a", 20], ["b", 0]]);
    await sup.stop();
  });

  test("a child waiting out its backoff holds up no one: a sibling's crash meanwhile is restarted at once", async () => {
    const [a, b] = [double("a"), double("b")];
    const { sup, events } = await started({ id: "root", intensity: 10, period: 60_000, backoff: { initialMs: 3000, maxMs: 5000, jitter: 0 }, children: [a, b] });
    // The second crash is a repeated one: a waits 3 s.
    await crashTwice(a, events);
    b.crash();
    await waitFor(() => b.starts === 2, "b restarted while a waits", 1500);
    expect(a.starts).toBe(2);
    await waitFor(() => a.starts === 3, "a restarted after its backoff", 10_000);
    expect(events.flatMap((e) => (e.type === "restarting" ? [[e.child, e.delayMs]] : []))).toEqual([["a", 0], ["a", 3000], ["b", 0]]);
    await sup.stop();
  });

  test("a supervisor stopped while a child waits out its backoff does not start it", async () => {
    const a = double("a");
    const { sup, events } = await started({ id: "root", intensity: 10, period: 60_000, backoff: { initialMs: 300, jitter: 0 }, children: [a] });
    await crashTwice(a, events);
    await sup.stop();
    // Twice the backoff: a start it had scheduled would have come by then.
    expect(await holdsWithin(() => a.starts > 2, 600)).toBe(false);
    expect(sup.status()[0]!.state).toBe("stopped");
    expect(restartStory(events, "a")).toEqual([["restarting", 0], ["restarted", "a"], ["restarting", 300], ["abandoned", "stopping"]]);
  });

  test("a restart overtaken by a newer one says so: every restarting ends in one restarted or restart_abandoned", async () => {
    const a = double("a");
    const { sup, events } = await started({ id: "root", intensity: 10, period: 60_000, backoff: { initialMs: 1000, maxMs: 1000, jitter: 0 }, children: [a] });
    await crashTwice(a, events); // the second restart waits 1 s
    await sup.restartChild("a");
    a.crash(); // back early, crashed again: this restart takes over from the waiting one
    await waitFor(() => a.starts === 4, "a restarted by the newer restart", 10_000);
    await waitFor(() => restartStory(events, "a").length === 6, "the newer restart's end");
    expect(restartStory(events, "a")).toEqual([["restarting", 0], ["restarted", "a"], ["restarting", 1000], ["abandoned", "superseded"], ["restarting", 1000], ["restarted", "a"]]);
    await sup.stop();
  });

  test("a child that fails to start: that restart is abandoned, and the next one (backed off) takes over", async () => {
    const a = double("a");
    const { sup, events } = await started({ id: "root", intensity: 10, period: 60_000, backoff: { initialMs: 20, jitter: 0 }, children: [a] });
    a.failNextStart = true;
    a.crash();
    await waitFor(() => a.starts === 2, "a started after its failed start");
    await waitFor(() => restartStory(events, "a").length === 4, "the second restart's end");
    expect(restartStory(events, "a")).toEqual([["restarting", 0], ["abandoned", "start_failed"], ["restarting", 20], ["restarted", "a"]]);
    expect(events.find((e) => e.type === "restart_abandoned")).toMatchObject({ started: [] });
    await sup.stop();
  });

  test("one_for_all: the siblings stop at once, and the group starts when the backoff is over", async () => {
    const [a, b] = [double("a"), double("b")];
    const { sup, events } = await started({ id: "root", strategy: "one_for_all", intensity: 10, period: 60_000, backoff: { initialMs: 400, jitter: 0 }, children: [a, b] });
    a.crash();
    await waitFor(() => a.starts === 2 && b.starts === 2, "the group restarted at once");
    let bStoppedAt = 0;
    sup.onEvent((e) => {
      if (e.type === "stopped" && e.child === "b") bStoppedAt = performance.now();
    });
    const crashedAt = performance.now();
    a.crash(); // repeated: 400 ms
    await waitFor(() => bStoppedAt > 0, "b stopped with a's second crash");
    expect(bStoppedAt - crashedAt).toBeLessThan(300);
    expect([a.starts, b.starts]).toEqual([2, 2]);
    await waitFor(() => a.starts === 3 && b.starts === 3, "the group started after the backoff");
    expect(events.filter((e) => e.type === "restarted").length).toBe(2);
    await sup.stop();
  });

  test("a child brought back during its backoff (restartChild) is not started again when the wait ends, nor after a normal exit", async () => {
    const a = double("a", "transient");
    const { sup, events } = await started({ id: "root", intensity: 10, period: 60_000, backoff: { initialMs: 300, jitter: 0 }, children: [a] });
    // The second crash waits 300 ms.
    await crashTwice(a, events);
    await sup.restartChild("a");
    expect(a.starts).toBe(3);
    a.finish(); // transient: a normal exit is not restarted
    await waitFor(() => sup.status()[0]!.state === "exited", "a exited for good");
    // When the wait ends there is nothing left to restart, and the event says so.
    await waitFor(() => events.some((e) => e.type === "restart_abandoned"), "the waiting restart's end", 5000);
    expect(restartStory(events, "a")).toEqual([["restarting", 0], ["restarted", "a"], ["restarting", 300], ["abandoned", "came_back"]]);
    expect(a.starts).toBe(3);
    await sup.stop();
  });

  test("the sequence starts again, with an immediate restart, after a quiet period", () => {
    const slot = new ChildSlot(double("x"), { initialMs: 10, maxMs: 1000, jitter: 0, resetAfterMs: 5000 });
    expect([slot.restartDelay(0), slot.restartDelay(100), slot.restartDelay(200), slot.restartDelay(4000)]).toEqual([0, 10, 20, 40]);
    // 5000 ms after the last restart: a one-off crash again.
    expect([slot.restartDelay(9000), slot.restartDelay(9100), slot.restartDelay(9200)]).toEqual([0, 10, 20]);
  });

  test("without a backoff every restart is immediate", () => {
    const slot = new ChildSlot(double("x"), undefined);
    expect([slot.restartDelay(0), slot.restartDelay(1), slot.restartDelay(2)]).toEqual([0, 0, 0]);
  });
});
