/**
 * A link after a break (PeerLink's ramp, docs/protocol.md §4 "After a break the link ramps up"):
 * what waited reaches the new connection in order, new sends queue behind it, and a message whose
 * handler never finishes (acks are cumulative, so none come) holds nothing up for good. Real
 * nodes on a real socket; the first receiver never acknowledges and is closed under the sender.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { MeshNode } from "../../mesh/mesh-node.ts";
import { Registry, type RegistryEntry } from "../../mesh/registry.ts";
import { tempDir, waitFor } from "../helpers.ts";

test("after a break: everything that waited arrives in order, new sends behind it, though the first is never finished", async () => {
  using dir = tempDir("hm-ramp-");
  const socket = join(dir.path, "r.sock");
  const registry = new Registry();
  registry.upsert({ name: "r", instance: 0, address: "r", id: "id-r", socket, capabilities: [], subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 0 } satisfies RegistryEntry);
  const receiver = (seen: Array<[number, number]>, finish: (i: number) => boolean) =>
    MeshNode.start({
      address: "r", socketPath: socket, routes: registry, pick: (c) => c[0],
      onEvent: (event) => {
        seen.push([Number(event.envelope.payload.i), event.envelope.attempt ?? 1]);
        if (finish(Number(event.envelope.payload.i))) event.done();
      },
    });
  const first: Array<[number, number]> = [];
  let crashed: MeshNode | undefined = await receiver(first, () => false);
  const sender = await MeshNode.start({ address: "s", routes: registry, pick: (c) => c[0] });
  let second: MeshNode | undefined;
  try {
    for (let i = 0; i < 20; i++) sender.emit({ target_agent: "r" }, { i });
    await waitFor(() => first.length === 20, "all 20 at the first receiver, none acknowledged");
    await crashed.close();
    crashed = undefined;
    const seen: Array<[number, number]> = [];
    // The new one never finishes event 0: no ack comes for anything (they are cumulative).
    second = await receiver(seen, (i) => i !== 0);
    await waitFor(() => seen.length > 0, "the sender reconnected");
    // Ramping: the rest still waits at the sender, and what is sent now goes behind it.
    expect(sender.stats.queued).toBeGreaterThan(0);
    for (let i = 20; i < 25; i++) sender.emit({ target_agent: "r" }, { i });
    await waitFor(() => seen.length === 25, "all 25 at the new receiver");
    expect(seen.map(([i]) => i)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(seen.slice(0, 20).every(([, attempt]) => attempt === 2)).toBe(true);
    expect(seen.slice(20).every(([, attempt]) => attempt === 1)).toBe(true);
  } finally {
    await sender.close();
    await crashed?.close();
    await second?.close();
  }
});

test("an event's done may be taken apart from it, and acknowledges it once however often it is called", async () => {
  using dir = tempDir("hm-done-");
  const socket = join(dir.path, "d.sock");
  const registry = new Registry();
  registry.upsert({ name: "d", instance: 0, address: "d", id: "id-d", socket, capabilities: [], subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 0 } satisfies RegistryEntry);
  let handled = 0;
  const receiver = await MeshNode.start({
    address: "d", socketPath: socket, routes: registry, pick: (c) => c[0],
    onEvent: ({ done }) => {
      handled++;
      done();
      done();
    },
  });
  const sender = await MeshNode.start({ address: "s", routes: registry, pick: (c) => c[0] });
  try {
    for (let i = 0; i < 50; i++) sender.emit({ target_agent: "d" }, { i });
    await waitFor(() => sender.inFlightTo("d") === 0 && handled === 50, "all 50 handled and acknowledged");
    expect(receiver.stats.serving).toBe(0);
  } finally {
    await sender.close();
    await receiver.close();
  }
});
