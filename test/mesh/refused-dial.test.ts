/**
 * A destination that refuses the sender (a wrong token, or socket permissions: code 5) does
 * not get better with time: what waits for it is refused at once with code 5, not retried
 * until its deadline passes (code 3), and the sender's dead letters say why.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import type { RegistryEntry } from "../../mesh/registry.ts";
import { tempDir } from "../helpers.ts";

test("a request to a member that refuses the sender's token fails at once with code 5", async () => {
  using dir = tempDir("hm-refused-");
  const socket = join(dir.path, "guarded.sock");
  const guarded = await MeshNode.start({ address: "guarded", socketPath: socket, token: "right", routes: { resolveTarget: () => [], withCapability: () => [], subscribersOf: () => [], byAddress: () => undefined } as never, pick: () => undefined, onRequest: (s) => s.respond({ ok: true }) });
  const entry = { name: "guarded", instance: 0, address: "guarded", id: "guarded", socket, capabilities: [], subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now() } satisfies RegistryEntry;
  const sender = await MeshNode.start({
    address: "sender",
    token: "wrong",
    routes: { resolveTarget: (t: string) => (t === "guarded" ? [entry] : []), withCapability: () => [], subscribersOf: () => [], byAddress: (a: string) => (a === "guarded" ? entry : undefined) } as never,
    pick: (candidates: readonly RegistryEntry[]) => candidates[0],
  });
  try {
    const refused = await sender.request({ target_agent: "guarded" }, { hi: 1 }, { timeoutMs: 20_000 }).catch((e) => e);
    expect(refused).toBeInstanceOf(HermesError);
    expect((refused as HermesError).code).toBe(ErrorCode.AUTH_FAILED);
    expect(sender.deadLetters().map((d) => d.error.error_code)).toEqual([ErrorCode.AUTH_FAILED]);
  } finally {
    await sender.close();
    await guarded.close();
  }
});
