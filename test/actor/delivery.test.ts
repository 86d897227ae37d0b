/**
 * Delivery guarantees with real processes and real `kill -9`: a receiver killed again and again
 * under load handles every message exactly once; a durable sender killed mid-stream loses nothing.
 */
import { describe, expect, test } from "bun:test";
import { waitFor } from "../helpers.ts";
import { startTestMesh } from "./mesh-harness.ts";

const MESH = `
mesh:
  name: delivery
supervisor:
  intensity: 100
  period_ms: 5000
  backoff: { initial_ms: 1, max_ms: 20 }
  children:
    - actor: ledger
      module: {FIXTURES}/ledger.ts
    - actor: relay
      module: {FIXTURES}/relay.ts
`;

/**
 * Kills `address` with SIGKILL each time progress crosses the next threshold, so every kill
 * lands mid-stream (with a batch in flight), and waits for the restart before the next one.
 */
async function killAtProgress(t: Awaited<ReturnType<typeof startTestMesh>>, address: string, thresholds: number[], progress: () => number): Promise<number> {
  let kills = 0;
  for (const threshold of thresholds) {
    await waitFor(() => progress() >= threshold && t.mesh.registry.byAddress(address)?.health === "healthy", `progress ${threshold} with ${address} up`, 30_000);
    process.kill(t.pid(address), "SIGKILL");
    kills++;
    await waitFor(() => t.mesh.registry.byAddress(address)?.health !== "healthy", `${address} to be seen down`, 10_000);
  }
  return kills;
}

describe("delivery across crashes", () => {
  test("a durable receiver killed with SIGKILL 5 times mid-stream handles every request exactly once", async () => {
    await using t = await startTestMesh(MESH);
    const client = await t.client();
    const total = 1500;
    let answered = 0;
    const sending = (async () => {
      for (let batch = 0; batch < total; batch += 100) {
        await Promise.all(
          Array.from({ length: 100 }, (_, i) => client.request("ledger", { key: batch + i }, { timeoutMs: 60_000 }).then(() => answered++)),
        );
      }
    })();
    const kills = await killAtProgress(t, "ledger", [100, 300, 500, 800, 1100], () => answered);
    await sending;
    expect(answered).toBe(total);
    expect(t.mesh.registry.byAddress("ledger")!.restarts).toBe(kills);
    const counts = (await client.request("ledger", { op: "counts" })).payload as Record<string, number>;
    const keys = Object.keys(counts).map(Number).sort((a, b) => a - b);
    expect(keys).toEqual(Array.from({ length: total }, (_, i) => i));
    const twice = Object.entries(counts).filter(([, n]) => n !== 1);
    expect(twice).toEqual([]);
  }, 90_000);

  test("a durable sender killed with SIGKILL mid-stream loses nothing and doubles nothing", async () => {
    await using t = await startTestMesh(MESH);
    const client = await t.client();
    const total = 1000;
    let answered = 0;
    const sending = (async () => {
      for (let batch = 0; batch < total; batch += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, i) => client.request("relay", { n: batch + i }, { timeoutMs: 60_000 }).then(() => answered++)));
      }
    })();
    const kills = await killAtProgress(t, "relay", [100, 300, 500, 700], () => answered);
    await sending;
    expect(t.mesh.registry.byAddress("relay")!.restarts).toBe(kills);
    // The relay's outbox drains to the ledger after each restart: wait until every key arrived.
    let counts: Record<string, number> = {};
    await waitFor(async () => {
      counts = (await client.request("ledger", { op: "counts" })).payload as Record<string, number>;
      return Object.keys(counts).length >= total;
    }, "every relayed message to reach the ledger", 30_000);
    const expected = Array.from({ length: total }, (_, i) => `relay-${i}`).sort();
    expect(Object.keys(counts).sort()).toEqual(expected);
    expect(Object.entries(counts).filter(([, n]) => n !== 1)).toEqual([]);
  }, 90_000);
});
