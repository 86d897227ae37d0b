/**
 * A destination that refuses the sender (a wrong token, or socket permissions: code 5) does
 * not get better with time: what waits for it is refused at once with code 5, not retried
 * until its deadline passes (code 3), and the sender's dead letters say why.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { MeshNode, type DeadLetterLimits } from "../../mesh/mesh-node.ts";
import type { RegistryEntry } from "../../mesh/registry.ts";
import { tempDir } from "../helpers.ts";

/** A member that wants the token "right", and a sender with a wrong one. */
async function guardedAndSender(socket: string, deadLetters?: DeadLetterLimits): Promise<{ guarded: MeshNode; sender: MeshNode }> {
  const guarded = await MeshNode.start({ address: "guarded", socketPath: socket, token: "right", routes: { resolveTarget: () => [], withCapability: () => [], subscribersOf: () => [], byAddress: () => undefined } as never, pick: () => undefined, onRequest: (s) => s.respond({ ok: true }) });
  const entry = { name: "guarded", instance: 0, address: "guarded", id: "guarded", socket, capabilities: [], subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now() } satisfies RegistryEntry;
  const sender = await MeshNode.start({
    address: "sender",
    token: "wrong",
    routes: { resolveTarget: (t: string) => (t === "guarded" ? [entry] : []), withCapability: () => [], subscribersOf: () => [], byAddress: (a: string) => (a === "guarded" ? entry : undefined) } as never,
    pick: (candidates: readonly RegistryEntry[]) => candidates[0],
    ...(deadLetters && { deadLetters }),
  });
  return { guarded, sender };
}

test("a request to a member that refuses the sender's token fails at once with code 5", async () => {
  using dir = tempDir("hm-refused-");
  const { guarded, sender } = await guardedAndSender(join(dir.path, "guarded.sock"));
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

test("the sender's dead letters stay within the limits it was given; their count goes on", async () => {
  using dir = tempDir("hm-refused-");
  const { guarded, sender } = await guardedAndSender(join(dir.path, "guarded.sock"), { max: 2, maxBytes: 150_000 });
  try {
    for (let i = 1; i <= 3; i++) {
      const refused = await sender.request({ target_agent: "guarded" }, { n: i, pad: "x".repeat(100_000) }, { timeoutMs: 20_000 }).catch((e) => e);
      expect((refused as HermesError).code).toBe(ErrorCode.AUTH_FAILED);
    }
    const kept = sender.deadLetters();
    // The newest two; the older of them without its payload, which two would not fit in 150,000 bytes.
    expect(kept.map((d) => d.envelope.message_id)).toHaveLength(2);
    expect(kept[0]!.envelope.payload).toEqual({});
    expect(kept[0]!.payloadDroppedBytes).toBeGreaterThan(100_000);
    expect(kept[0]!.error.error_code).toBe(ErrorCode.AUTH_FAILED);
    expect(kept[1]!.envelope.payload.n).toBe(3);
    expect(kept[1]!.payloadDroppedBytes).toBeUndefined();
    expect(sender.stats).toMatchObject({ deadLetters: 2, deadLettersTotal: 3 });
  } finally {
    await sender.close();
    await guarded.close();
  }
});
