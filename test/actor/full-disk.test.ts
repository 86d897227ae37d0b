/**
 * A full disk under a running mesh, with real actor processes: the mesh directory (event logs,
 * durable databases) on a 2 MB tmpfs that the test fills up and frees again, or, where no
 * tmpfs can be mounted, under the test-only HERMES_TEST_DISK_FULL injection. A durable actor
 * that cannot commit answers code 6 at once and stays up; an event log that cannot write
 * drops lines, says how many, and never takes its actor down.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { readEvents } from "../../src/observability/event-log-reader.ts";
import { join } from "node:path";
import { MeshNode } from "../../mesh/mesh-node.ts";
import { schedulerPicker, Scheduler } from "../../mesh/routing.ts";
import { Registry } from "../../mesh/registry.ts";
import { ActorRuntime } from "../../src/actor/actor-runtime.ts";
import { connectMesh, type MeshClient } from "../../src/actor/connect-mesh.ts";
import { defineActor } from "../../src/actor/define-actor.ts";
import { DurableStore } from "../../src/actor/durable-store.ts";
import { createLogger } from "../../mesh/logger.ts";
import { createRequest } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { parseMeshFile } from "../../src/supervisor/mesh-file.ts";
import { startMesh, type RunningMesh } from "../../src/supervisor/mesh-runtime.ts";
import { diskKinds, injectInto, openDisk, type FullableDisk } from "../disk-full.ts";
import { waitFor } from "../helpers.ts";
import { ACTORS, FIXTURE_ACTORS, stopMeshForGood } from "./mesh-harness.ts";

/** Far more than a refused commit takes: a code-6 answer must come long before it. */
const TIMEOUT_MS = 15_000;
const PROMPT_MS = 3000;

interface MeshOnDisk extends AsyncDisposable {
  mesh: RunningMesh;
  /** Every line the actors printed, `[address] line`. */
  output: string[];
  client: MeshClient;
  pid(address: string): number;
  /** The JSON lines an actor printed (its logger's warnings), by message. */
  printed(address: string, msg: string): Array<Record<string, unknown>>;
}

/** A mesh of one actor with its directory on `disk`; stopped on dispose, its processes killed whatever happened. */
async function startMeshOn(disk: FullableDisk, actor: { name: string; module: string }, events: boolean): Promise<MeshOnDisk> {
  const env = Object.entries(disk.env).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(", ");
  const yaml = `
mesh:
  name: full-disk
  events: ${events}
supervisor:
  intensity: 5
  period_ms: 5000
  children:
    - actor: ${actor.name}
      module: ${actor.module}
      env: { ${env} }
`;
  const file = join(disk.dir, "mesh.yaml");
  writeFileSync(file, yaml);
  const output: string[] = [];
  const mesh = await startMesh(parseMeshFile(yaml, file), {
    dir: disk.dir,
    log: createLogger({ component: "supervisor" }, () => {}),
    onOutput: (address, line) => output.push(`[${address}] ${line}`),
    gateway: false,
  });
  let client: MeshClient;
  try {
    client = await connectMesh({ dir: mesh.dir, name: "test" });
  } catch (error) {
    await mesh.stop();
    throw error;
  }
  return {
    mesh,
    output,
    client,
    pid(address) {
      const pid = mesh.registry.byAddress(address)?.pid;
      if (!pid) throw new Error(`${address} has no pid`);
      return pid;
    },
    printed(address, msg) {
      const prefix = `[${address}] `;
      return output
        .filter((line) => line.startsWith(prefix) && line.includes(msg))
        .map((line) => JSON.parse(line.slice(prefix.length)) as Record<string, unknown>)
        .filter((line) => line.msg === msg);
    },
    async [Symbol.asyncDispose]() {
      await client.close().catch(() => {});
      await stopMeshForGood(mesh);
    },
  };
}

/** Sends a request and returns the HermesError it was answered with, and how long that took. */
async function refusal(client: MeshClient, to: string, payload: Record<string, unknown>): Promise<{ error: HermesError; ms: number }> {
  const t0 = performance.now();
  const outcome = await client.request(to, payload, { timeoutMs: TIMEOUT_MS }).then(
    (reply) => new Error(`expected a refusal, got ${JSON.stringify(reply.payload)}`),
    (error: unknown) => error,
  );
  if (!(outcome instanceof HermesError)) throw outcome;
  return { error: outcome, ms: performance.now() - t0 };
}

const LEDGER = { name: "ledger", module: join(FIXTURE_ACTORS, "ledger.ts") };
const ECHO = { name: "echo", module: join(ACTORS, "echo.ts") };
/** A ledger key big enough that its commit needs a new page of the WAL (a tmpfs takes a write until its last page is full). */
const big = (key: string) => ({ key, pad: "p".repeat(6000) });
const STORE_REFUSED = "durable store cannot commit: calls are refused (code 6 on a full disk) and recorded nowhere until it can";

for (const { kind, skip } of diskKinds()) {
  describe.skipIf(skip !== undefined)(`a full disk under a mesh (${kind}${skip ? `; skipped: ${skip}` : ""})`, () => {
    test("a durable actor that cannot commit answers code 6 (resource disk) at once, stays up, and serves again once there is space", async () => {
      using disk = openDisk(kind);
      await using t = await startMeshOn(disk, LEDGER, false);
      expect((await t.client.request("ledger", big("before"), { timeoutMs: TIMEOUT_MS })).payload.key).toBe("before");
      const pid = t.pid("ledger");

      disk.fill();
      for (const key of ["a", "b", "c"]) {
        const { error, ms } = await refusal(t.client, "ledger", big(key));
        expect(error.code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
        expect(error.fields.resource).toBe("disk");
        expect(error.message).toContain("ledger.db cannot commit: database or disk is full");
        expect(ms).toBeLessThan(PROMPT_MS);
      }
      expect(t.pid("ledger")).toBe(pid);
      expect(t.mesh.registry.byAddress("ledger")!.restarts).toBe(0);
      await waitFor(() => t.printed("ledger", STORE_REFUSED).length > 0, "the store's warning");
      expect(t.printed("ledger", STORE_REFUSED)).toHaveLength(1);

      disk.free();
      for (const key of ["a", "d"]) expect((await t.client.request("ledger", big(key), { timeoutMs: TIMEOUT_MS })).payload).toMatchObject({ key, pid });
      const counts = (await t.client.request("ledger", { op: "counts" }, { timeoutMs: TIMEOUT_MS })).payload;
      // What was refused was recorded nowhere: "a" counts once (its retry), "b" and "c" not at all.
      expect(counts).toEqual({ before: 1, a: 1, d: 1 });
      await waitFor(() => t.printed("ledger", "durable store commits again").length > 0, "the store's recovery warning");
      expect(t.printed("ledger", "durable store commits again")[0]).toMatchObject({ db: "ledger.db", refused: 3 });
      expect(t.pid("ledger")).toBe(pid);
    }, 60_000);

    test("an actor whose event log cannot write keeps answering, and reports how many lines it dropped", async () => {
      using disk = openDisk(kind);
      await using t = await startMeshOn(disk, ECHO, true);
      const pid = t.pid("echo");
      const logPath = join(disk.dir, "logs", "echo.jsonl");
      await waitFor(async () => {
        await t.client.request("echo", { n: 0 }, { timeoutMs: TIMEOUT_MS });
        return readEvents(logPath).some((e) => e.event === "handled");
      }, "a first handled record in the log");

      disk.fill();
      let n = 1;
      // Requests until the log has failed to write; each must be answered all the same.
      await waitFor(async () => {
        const reply = await t.client.request("echo", { n, pad: "q".repeat(500) }, { timeoutMs: TIMEOUT_MS });
        expect(reply.payload.n).toBe(n++);
        return t.printed("echo", "event log cannot write: dropping lines until it can").length > 0;
      }, "the event log's warning", 20_000);
      for (let i = 0; i < 20; i++, n++) expect((await t.client.request("echo", { n }, { timeoutMs: TIMEOUT_MS })).payload.n).toBe(n);
      expect(t.pid("echo")).toBe(pid);
      expect(t.mesh.registry.byAddress("echo")!.restarts).toBe(0);

      disk.free();
      await waitFor(async () => {
        await t.client.request("echo", { n: n++ }, { timeoutMs: TIMEOUT_MS });
        return t.printed("echo", "event log writing again").length > 0;
      }, "the event log's recovery warning", 20_000);
      expect(t.printed("echo", "event log cannot write: dropping lines until it can")).toHaveLength(1);
      const recovered = t.printed("echo", "event log writing again")[0]!;
      expect(recovered.dropped).toBeGreaterThan(0);
      // The file says so too, where the lines are missing.
      const gap = readFileSync(logPath, "utf8").trim().split("\n").map((l) => JSON.parse(l)).find((l) => l.event === "log_dropped");
      expect(gap).toMatchObject({ actor: "echo", dropped: recovered.dropped });
      expect(t.pid("echo")).toBe(pid);
    }, 60_000);

    test("both at once: a durable actor with its event log on the full disk refuses with code 6 and stays up", async () => {
      using disk = openDisk(kind);
      await using t = await startMeshOn(disk, LEDGER, true);
      expect((await t.client.request("ledger", big("before"), { timeoutMs: TIMEOUT_MS })).payload.key).toBe("before");
      const pid = t.pid("ledger");
      disk.fill();
      for (let i = 0; i < 10; i++) {
        const { error, ms } = await refusal(t.client, "ledger", big(`k${i}`));
        expect([error.code, error.fields.resource]).toEqual([ErrorCode.RESOURCE_EXHAUSTED, "disk"]);
        expect(ms).toBeLessThan(PROMPT_MS);
      }
      await waitFor(() => t.printed("ledger", "event log cannot write: dropping lines until it can").length > 0, "the event log's warning");
      expect(t.pid("ledger")).toBe(pid);
      disk.free();
      expect((await t.client.request("ledger", big("after"), { timeoutMs: TIMEOUT_MS })).payload).toMatchObject({ key: "after", pid });
      expect((await t.client.request("ledger", { op: "counts" }, { timeoutMs: TIMEOUT_MS })).payload).toEqual({ before: 1, after: 1 });
    }, 60_000);

    test("an event whose commit the full disk refused is not acknowledged: the actor restarts and handles it again from the redelivery", async () => {
      using disk = openDisk(kind);
      await using t = await startMeshOn(disk, LEDGER, false);
      expect((await t.client.request("ledger", big("before"), { timeoutMs: TIMEOUT_MS })).payload.key).toBe("before");
      const pid = t.pid("ledger");
      disk.fill();
      await t.client.send("ledger", big("event"));
      // Its handler ran, but nothing of it could be recorded: acknowledging it would lose it.
      // The actor ends (before: it stayed up and handled nothing more, its mailbox stuck).
      await waitFor(() => t.mesh.registry.byAddress("ledger")?.pid !== pid, "the actor restarted", TIMEOUT_MS);
      disk.free();
      await waitFor(async () => {
        const counts = (await t.client.request("ledger", { op: "counts" }, { timeoutMs: TIMEOUT_MS })).payload;
        return counts.event === 1;
      }, "the redelivered event handled, once", TIMEOUT_MS);
      expect((await t.client.request("ledger", { op: "counts" }, { timeoutMs: TIMEOUT_MS })).payload).toEqual({ before: 1, event: 1 });
    }, 60_000);

    test("the message a full disk refused is handled when the same message comes again (in one process, over real sockets)", async () => {
      using disk = openDisk(kind);
      const registry = new Registry();
      const socket = join(disk.dir, "counter.sock");
      registry.upsert({
        name: "counter", instance: 0, address: "counter", id: "id-counter", socket, capabilities: [], subscriptions: [],
        health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now(),
      });
      const pick = schedulerPicker(new Scheduler());
      const quiet = createLogger({}, () => {});
      let durable: DurableStore;
      {
        using _ = injectInto(disk);
        durable = DurableStore.open(join(disk.dir, "counter.db"), { log: quiet });
      }
      const runtime = new ActorRuntime(
        defineActor({
          onRequest(request, ctx) {
            const n = (ctx.store.get<number>("n") ?? 0) + 1;
            ctx.store.set("n", n);
            ctx.store.set(`pad:${n}`, "p".repeat(6000));
            return { n, attempt: request.attempt ?? 1 };
          },
        }),
        { name: "counter", instance: 0, address: "counter", socketPath: socket, routes: registry, pick, log: quiet, durable },
      );
      await runtime.start();
      const client = await MeshNode.start({ address: "client", routes: registry, pick });
      try {
        disk.fill();
        const message = createRequest("client", { target_agent: "counter" }, {}, { ttl: TIMEOUT_MS });
        const first = await client.requestEnvelope({ ...message }, { timeoutMs: TIMEOUT_MS }).catch((e: unknown) => e);
        expect(first).toMatchObject({ code: ErrorCode.RESOURCE_EXHAUSTED, fields: { resource: "disk" } });
        expect(durable.lookup(message.message_id)).toBeUndefined();
        disk.free();
        // The same message_id again, as a redelivery would carry it: handled, not answered from a dedupe record.
        const again = await client.requestEnvelope({ ...message, attempt: 2 }, { timeoutMs: TIMEOUT_MS });
        expect(again.payload).toEqual({ n: 1, attempt: 2 });
        const third = await client.requestEnvelope({ ...message, attempt: 3 }, { timeoutMs: TIMEOUT_MS });
        expect(third.payload).toEqual({ n: 1, attempt: 2 });
      } finally {
        await client.close();
        await runtime.stop(1000);
      }
    }, 30_000);
  });
}
