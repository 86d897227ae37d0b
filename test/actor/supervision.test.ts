/** The supervisor tree over real actor processes: restarts, escalation through a nested supervisor, hung actors. */
import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../mesh/errors.ts";
import { waitFor } from "../helpers.ts";
import { startTestMesh } from "./mesh-harness.ts";

describe("supervision of actor processes", () => {
  test("a nested supervisor that exceeds its intensity escalates; the root restarts it, then gives up itself", async () => {
    await using t = await startTestMesh(`
mesh:
  name: escalation
supervisor:
  intensity: 1
  period_ms: 10000
  backoff: { initial_ms: 1, max_ms: 5 }
  children:
    - actor: steady
      module: {ACTORS}/echo.ts
    - supervisor: workers
      strategy: one_for_all
      intensity: 1
      period_ms: 10000
      backoff: { initial_ms: 1, max_ms: 5 }
      children:
        - actor: crasher
          module: {FIXTURES}/crasher.ts
        - actor: sidekick
          module: {ACTORS}/echo.ts
`);
    const healthy = (address: string, notPid: number) => {
      const e = t.mesh.registry.byAddress(address);
      return e?.health === "healthy" && e.pid !== undefined && e.pid !== notPid;
    };
    const crashOnce = async () => {
      const [crasher, sidekick] = [t.pid("crasher"), t.pid("sidekick")];
      process.kill(crasher, "SIGKILL");
      await waitFor(() => healthy("crasher", crasher) && healthy("sidekick", sidekick), "crasher and sidekick back", 10_000);
    };
    const sidekick = t.pid("sidekick");
    await crashOnce(); // 1 restart within workers' intensity: one_for_all restarts the sidekick too
    expect(t.pid("sidekick")).not.toBe(sidekick);
    const steady = t.pid("steady");
    await crashOnce(); // 2nd: workers gives up, escalates; the root restarts the whole workers subtree
    expect(t.events.some((e) => e.type === "intensity_exceeded" && e.supervisor === "workers")).toBe(true);
    expect(t.events.some((e) => e.type === "exited" && e.supervisor === "root" && e.child === "workers")).toBe(true);
    expect(t.pid("steady")).toBe(steady); // one_for_one at the root: the sibling is untouched

    // Twice more: workers escalates again, which is the root's second restart in its period.
    await crashOnce();
    process.kill(t.pid("crasher"), "SIGKILL");
    expect(await t.mesh.ended).toBe("reached_max_restart_intensity");
    expect(t.events.some((e) => e.type === "intensity_exceeded" && e.supervisor === "root")).toBe(true);
    // Children were stopped in reverse start order: steady (started first) stopped last.
    const stops = t.events.filter((e) => e.type === "stopped" && e.supervisor === "root" && e.child).map((e) => e.child);
    expect(stops.at(-1)).toBe("steady");
  }, 60_000);

  /** One crasher actor, heartbeats every 100 ms; `hung` sets mesh.hung_after_ms. */
  const crasherMesh = (name: string, hung?: number) => `
mesh:
  name: ${name}
  heartbeat_ms: 100${hung === undefined ? "" : `\n  hung_after_ms: ${hung}`}
supervisor:
  intensity: 5
  children:
    - actor: crasher
      module: {FIXTURES}/crasher.ts
`;

  test("an actor whose event loop hangs misses heartbeats and is killed and restarted like a crash", async () => {
    await using t = await startTestMesh(crasherMesh("hang", 300));
    const client = await t.client();
    const pid = t.pid("crasher");
    const hung = await client.request("crasher", { op: "hang" }, { timeoutMs: 1500 }).catch((e) => e);
    // Its redeliveries hang each new instance until the deadline: the client's timer says so (3),
    // or its link dropping the envelope whose ttl is spent (9), whichever runs first.
    expect([ErrorCode.TASK_TIMEOUT, ErrorCode.TTL_EXPIRED]).toContain(hung.code);
    await waitFor(() => t.mesh.registry.byAddress("crasher")?.health === "healthy" && t.mesh.registry.byAddress("crasher")?.pid !== pid, "a restarted crasher", 10_000);
    expect(t.events.some((e) => e.type === "exited" && e.child === "crasher" && e.exit.signal === "SIGKILL")).toBe(true);
    const after = await client.request("crasher", { ok: 1 }, { timeoutMs: 5000 });
    expect(after.payload.pid).toBe(t.pid("crasher"));
  }, 30_000);

  test("a loop busy for many heartbeats but less than hung_after_ms (default 10 s) is not killed", async () => {
    await using t = await startTestMesh(crasherMesh("busy"));
    const client = await t.client();
    const pid = t.pid("crasher");
    // Ten heartbeat intervals without one: three missed ones killed it before.
    const answer = await client.request("crasher", { op: "block", ms: 1000 }, { timeoutMs: 10_000 });
    expect(answer.payload.pid).toBe(pid);
    expect(t.events.some((e) => e.type === "exited")).toBe(false);
    expect(t.log.some((line) => line.includes("missed heartbeats"))).toBe(false);
  }, 30_000);
});
