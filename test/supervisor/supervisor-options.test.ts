import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../mesh/errors.ts";
import type { ChildHandle, ChildSpec, ExitInfo } from "../../src/supervisor/child-spec.ts";
import { supervisorChild } from "../../src/supervisor/supervisor-child.ts";
import { Supervisor } from "../../src/supervisor/supervisor.ts";

/** An in-memory child: no process, exits when stopped or killed. */
function memoryChild(id: string): ChildSpec {
  return {
    id,
    async start(): Promise<ChildHandle> {
      const { promise, resolve } = Promise.withResolvers<ExitInfo>();
      return { exited: promise, stop: () => resolve({ code: 0, signal: null }), kill: () => resolve({ code: null, signal: "SIGKILL" }) };
    },
  };
}

const invalid = expect.objectContaining({ code: ErrorCode.INVALID_REQUEST });

describe("Supervisor options and lifecycle", () => {
  test("a bad tree is refused when built", () => {
    const start = memoryChild("x").start;
    expect(() => new Supervisor({ id: "", children: [] })).toThrow(invalid);
    expect(() => new Supervisor({ id: "s", children: [{ id: "a", start }, { id: "a", start }] })).toThrow(invalid);
    expect(() => new Supervisor({ id: "s", strategy: "one_for_some" as never, children: [] })).toThrow(invalid);
    expect(() => new Supervisor({ id: "s", children: [{ id: "a", start, restart: "sometimes" as never }] })).toThrow(invalid);
    expect(() => new Supervisor({ id: "s", children: [{ id: "a", start, shutdown: -1 }] })).toThrow(invalid);
    expect(() => new Supervisor({ id: "s", intensity: -1, children: [] })).toThrow(invalid);
    expect(() => supervisorChild({ id: "inner", children: [{ id: "a", start }, { id: "a", start }] })).toThrow(invalid);
  });

  test("start() twice is refused; stop() is idempotent; stop() before start() just ends", async () => {
    const sup = new Supervisor({ id: "s", children: [memoryChild("a")] });
    await sup.start();
    await expect(sup.start()).rejects.toMatchObject({ code: ErrorCode.INVALID_REQUEST });
    const [one, two] = [sup.stop(), sup.stop()];
    expect(one).toBe(two);
    await one;
    const never = new Supervisor({ id: "n", children: [memoryChild("a")] });
    await never.stop();
    expect(never.state).toBe("stopped");
    expect(await never.exited).toMatchObject({ reason: "shutdown" });
  });

  test("stop() during start() makes start() reject and stops what did start", async () => {
    const gate = Promise.withResolvers<void>();
    const slow: ChildSpec = { id: "slow", start: async () => (await gate.promise, memoryChild("slow").start()) };
    const sup = new Supervisor({ id: "s", children: [memoryChild("a"), slow, memoryChild("c")] });
    const starting = sup.start();
    const stopping = sup.stop();
    gate.resolve();
    await expect(starting).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE, fields: { reason: "stopped while starting" } });
    await stopping;
    expect(sup.status().map((s) => s.state)).toEqual(["stopped", "stopped", "stopped"]);
  });

  test("a child supervisor defaults to type supervisor, shutdown Infinity, and reports its children", async () => {
    const spec = supervisorChild({ id: "inner", children: [memoryChild("a")] });
    expect(spec.type).toBe("supervisor");
    const sup = new Supervisor({ id: "root", children: [spec] });
    await sup.start();
    expect(sup.status()[0]).toMatchObject({ id: "inner", type: "supervisor", state: "running", children: [{ id: "a", state: "running" }] });
    await sup.stop();
    expect(sup.status()[0]!.lastExit).toEqual({ code: 0, signal: null, reason: "shutdown" });
  });
});
