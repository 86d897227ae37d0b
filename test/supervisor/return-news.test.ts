/**
 * The news that a restarted instance is back goes first to the members that wait for it (they
 * said `awaiting`: envelopes of theirs could not reach it), and RETURN_NEWS_DELAY_MS later to
 * those that hold nothing for it, so that their wake-ups stay out of the restart's first
 * answers (mesh/control-server.ts). Anything else that is news goes to everyone at once.
 */
import { expect, test } from "bun:test";
import { once } from "node:events";
import { createServer } from "node:net";
import { join } from "node:path";
import { RETURN_NEWS_DELAY_MS } from "../../mesh/control-server.ts";
import { joinMesh } from "../../mesh/join.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import type { RegistryEntry } from "../../mesh/registry.ts";
import { startTestMesh } from "../actor/mesh-harness.ts";
import { tempDir, waitFor } from "../helpers.ts";

test("a member waiting for a restarted instance hears of its return first; an idle one later; a join at once", async () => {
  await using t = await startTestMesh(`
mesh: { name: return-news }
supervisor:
  intensity: 10
  children:
    - { actor: solo, module: {ACTORS}/echo.ts }
`);
  await using waiting = await joinMesh({ dir: t.mesh.dir, address: "waiting" });
  await using idle = await joinMesh({ dir: t.mesh.dir, address: "idle" });
  await waiting.node.request({ target_agent: "solo" }, { n: 0 }, { timeoutMs: 5000 });
  const before = t.pid("solo");
  const heard = new Map<string, number>();
  for (const [name, member] of [["waiting", waiting], ["idle", idle]] as const) {
    member.registry.onUpdate(() => {
      const pid = member.registry.byAddress("solo")?.pid;
      if (pid !== undefined && pid !== before && member.registry.byAddress("solo")?.health === "healthy" && !heard.has(name)) heard.set(name, performance.now());
    });
  }
  process.kill(before, "SIGKILL");
  // Sent as the instance dies: it waits in the link, which says so to the supervisor.
  const answer = await waiting.node.request({ target_agent: "solo" }, { n: 1 }, { timeoutMs: 10_000 });
  expect(answer.payload).toMatchObject({ n: 1 });
  await waitFor(() => heard.size === 2, "both members to hear of the return", 10_000);
  // Held back by RETURN_NEWS_DELAY_MS for the idle one (at once, both within a ms or two).
  expect(heard.get("idle")! - heard.get("waiting")!).toBeGreaterThanOrEqual(RETURN_NEWS_DELAY_MS - 30);
  // Other news is not held: a client's join reaches both members in the same moment.
  const joined = new Map<string, number>();
  for (const [name, member] of [["waiting", waiting], ["idle", idle]] as const) {
    member.registry.onUpdate(() => {
      if (member.registry.byAddress("late") && !joined.has(name)) joined.set(name, performance.now());
    });
  }
  await using _late = await joinMesh({ dir: t.mesh.dir, address: "late" });
  await waitFor(() => joined.size === 2, "the join at both members", 5000);
  expect(Math.abs(joined.get("idle")! - joined.get("waiting")!)).toBeLessThan(RETURN_NEWS_DELAY_MS - 30);
}, 30_000);

test("a link says once per outage that envelopes wait for a destination it cannot reach", async () => {
  using dir = tempDir("hm-away-");
  const socket = join(dir.path, "later.sock");
  const entry = { name: "later", instance: 0, address: "later", id: "later", socket, capabilities: [], subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now() } satisfies RegistryEntry;
  const routes = { resolveTarget: (t: string) => (t === "later" ? [entry] : []), withCapability: () => [], subscribersOf: () => [], byAddress: (a: string) => (a === "later" ? entry : undefined) } as never;
  const away: string[] = [];
  const sender = await MeshNode.start({ address: "sender", routes, pick: (c: readonly RegistryEntry[]) => c[0], onAwaiting: (to) => away.push(to) });
  const noRoutes = { resolveTarget: () => [], withCapability: () => [], subscribersOf: () => [], byAddress: () => undefined } as never;
  // Something that takes each dial and drops it before the hello: every retry fails, and is counted.
  let dials = 0;
  const dropper = createServer((s) => {
    dials++;
    s.destroy();
  }).listen(socket);
  await once(dropper, "listening");
  let receiver: MeshNode | undefined;
  try {
    const first = sender.request({ target_agent: "later" }, { n: 1 }, { timeoutMs: 10_000 });
    await waitFor(() => dials >= 3, "three failed dials");
    expect(away).toEqual(["later"]);
    await new Promise((resolve) => dropper.close(resolve));
    const held: Array<() => void> = [];
    receiver = await MeshNode.start({ address: "later", socketPath: socket, routes: noRoutes, pick: () => undefined, onRequest: (s) => (s.request.payload.n === 1 ? s.respond({ ok: 1 }) : held.push(() => s.respond({ ok: 2 }))) });
    expect((await first).payload).toEqual({ ok: 1 });
    // Connected, and a request on the connection unanswered when it breaks: a new outage.
    void sender.request({ target_agent: "later" }, { n: 2 }, { timeoutMs: 10_000 }).catch(() => {});
    await waitFor(() => held.length === 1, "the second request at the receiver");
    await receiver.close();
    receiver = undefined;
    await waitFor(() => away.length === 2, "the second awaiting");
    expect(away).toEqual(["later", "later"]);
  } finally {
    dropper.close();
    await receiver?.close();
    await sender.close();
  }
}, 20_000);
