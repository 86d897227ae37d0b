/**
 * What a node tells its scheduler about the requests it sent (MeshNodeOptions.onOutcome): one
 * outcome per request that went out, counted against the destination it went to; none for a
 * request whose send was refused before it left (it says nothing of that destination).
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import type { RegistryEntry } from "../../mesh/registry.ts";
import { tempDir } from "../helpers.ts";

test("a node tells one outcome per request that went out, none for a send refused before it left", async () => {
  using dir = tempDir("hm-outcome-");
  const socket = join(dir.path, "echo.sock");
  const none = { resolveTarget: () => [], withCapability: () => [], subscribersOf: () => [], byAddress: () => undefined } as never;
  const echo = await MeshNode.start({ address: "echo", socketPath: socket, routes: none, pick: () => undefined, onRequest: (s) => (s.request.payload.fail ? s.fail(new HermesError(ErrorCode.INTERNAL, "asked to fail")) : s.respond({ ok: true })) });
  const entry = { name: "echo", instance: 0, address: "echo", id: "echo", socket, capabilities: [], subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now() } satisfies RegistryEntry;
  const outcomes: Array<[string, boolean]> = [];
  const sender = await MeshNode.start({
    address: "sender",
    routes: { resolveTarget: (t: string) => (t === "echo" ? [entry] : []), withCapability: () => [], subscribersOf: () => [], byAddress: (a: string) => (a === "echo" ? entry : undefined) } as never,
    pick: (candidates: readonly RegistryEntry[]) => candidates[0],
    onOutcome: (address, ok, latencyMs) => {
      expect(latencyMs).toBeGreaterThanOrEqual(0);
      outcomes.push([address, ok]);
    },
  });
  try {
    expect((await sender.request({ target_agent: "echo" }, {}, { timeoutMs: 10_000 })).payload).toEqual({ ok: true });
    expect(outcomes).toEqual([["echo", true]]);
    const failed = await sender.request({ target_agent: "echo" }, { fail: true }, { timeoutMs: 10_000 }).catch((e) => e);
    expect((failed as HermesError).code).toBe(ErrorCode.INTERNAL);
    expect(outcomes).toEqual([["echo", true], ["echo", false]]); // code 7 counts against the instance
    // Refused by the open connection as it was encoded: it never left, and says nothing of echo.
    const refused = await sender.request({ target_agent: "echo" }, { f: () => 1 } as never, { timeoutMs: 10_000 }).catch((e) => e);
    expect(refused).toBeInstanceOf(HermesError);
    expect(outcomes).toHaveLength(2);
  } finally {
    await sender.close();
    await echo.close();
  }
});
