/** Redelivery limits with real processes: attempts counted, dead letters after max attempts, ttl shrinking across deliveries. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ErrorCode } from "../../mesh/errors.ts";
import { tempDir, waitFor } from "../helpers.ts";
import { startTestMesh } from "./mesh-harness.ts";

const MESH = `
mesh:
  name: redelivery
supervisor:
  intensity: 100
  period_ms: 5000
  backoff: { initial_ms: 1, max_ms: 5 }
  children:
    - actor: crasher
      module: {FIXTURES}/crasher.ts
`;

describe("redelivery", () => {
  test("a redelivered request carries attempt 2 and the ttl left after the wait", async () => {
    await using t = await startTestMesh(MESH);
    using dir = tempDir();
    const client = await t.client();
    const reply = await client.request("crasher", { op: "die-once", marker: join(dir.path, "marker") }, { ttl: 20_000, timeoutMs: 20_000 });
    expect(reply.payload.attempt).toBe(2);
    expect(reply.payload.ttl).toBeLessThan(20_000);
    expect(reply.payload.ttl).toBeGreaterThan(10_000);
    expect(t.mesh.registry.byAddress("crasher")!.restarts).toBe(1);
  }, 30_000);

  test("a poison message is dead-lettered after 10 attempts and answered with code 10; the actor serves again", async () => {
    await using t = await startTestMesh(MESH);
    const client = await t.client();
    const error = await client.request("crasher", { op: "die" }, { timeoutMs: 30_000 }).catch((e) => e);
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.message).toContain("10 delivery attempts");
    const dead = client.deadLetters();
    expect(dead).toHaveLength(1);
    expect(dead[0]!.envelope.payload).toEqual({ op: "die" });
    expect(dead[0]!.envelope.attempt).toBe(11);
    expect(dead[0]!.destination).toBe("crasher");
    // Ten deliveries, ten crashes: the tenth restart may still be under way when the client gives up.
    await waitFor(() => t.mesh.registry.byAddress("crasher")!.restarts === 10 && t.mesh.registry.byAddress("crasher")!.health === "healthy", "the tenth restart");
    const fine = await client.request("crasher", {}, { timeoutMs: 10_000 });
    expect(fine.payload.pid).toBe(t.pid("crasher"));
  }, 60_000);

  test("a poison message does not take the messages sent with it: after a crash the link ramps up, so it alone runs out of attempts", async () => {
    await using t = await startTestMesh(MESH);
    const client = await t.client();
    const poison = client.request("crasher", { op: "die" }, { timeoutMs: 60_000 }).catch((e) => e);
    // Sent with it, in the same window: every crash broke their connection too.
    const others = await Promise.all(Array.from({ length: 200 }, (_, i) => client.request("crasher", { i }, { timeoutMs: 60_000 }).then(() => "answered", (e) => e)));
    expect(others.filter((answer) => answer !== "answered")).toEqual([]);
    expect((await poison).code).toBe(ErrorCode.UNAVAILABLE);
    expect(client.deadLetters().map((letter) => letter.envelope.payload)).toEqual([{ op: "die" }]);
  }, 60_000);
});
