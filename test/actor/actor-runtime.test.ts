/** The actor runtime in one process: concurrency, priorities, errors and deadlines, over real sockets. */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ActorRuntime } from "../../src/actor/actor-runtime.ts";
import { defineActor, type ActorDefinition } from "../../src/actor/define-actor.ts";
import { createLogger } from "../../mesh/logger.ts";
import { schedulerPicker, Scheduler } from "../../mesh/routing.ts";
import { MeshNode } from "../../mesh/mesh-node.ts";
import { Registry } from "../../mesh/registry.ts";
import { ErrorCode } from "../../mesh/errors.ts";
import { createRequest } from "../../mesh/envelope.ts";
import { MAX_TIMER_MS, recordTimerDelays, simulateWork, tempDir, waitFor } from "../helpers.ts";

const quiet = createLogger({}, () => {});
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** One actor runtime and a client node, both routing from a registry that knows the actor. */
async function actorWithClient<S>(definition: ActorDefinition<S>, concurrency?: number) {
  const dir = tempDir();
  cleanups.push(() => dir[Symbol.dispose]());
  const registry = new Registry();
  const socket = join(dir.path, "subject.sock");
  registry.upsert({
    name: "subject", instance: 0, address: "subject", id: "id-subject", socket, capabilities: [], subscriptions: [],
    health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: Date.now(),
  });
  const pick = schedulerPicker(new Scheduler());
  const runtime = new ActorRuntime(definition, { name: "subject", instance: 0, address: "subject", socketPath: socket, routes: registry, pick, log: quiet, ...(concurrency && { concurrency }) });
  await runtime.start();
  cleanups.push(() => runtime.stop(1000));
  const client = await MeshNode.start({ address: "client", routes: registry, pick });
  cleanups.push(() => client.close());
  return { runtime, client };
}

describe("ActorRuntime", () => {
  test("runs at most `concurrency` handlers at once, and does run that many in parallel", async () => {
    let running = 0;
    let peak = 0;
    const { client } = await actorWithClient(
      defineActor({
        async onRequest() {
          peak = Math.max(peak, ++running);
          await simulateWork(30);
          running--;
          return {};
        },
      }),
      3,
    );
    await Promise.all(Array.from({ length: 12 }, () => client.request({ target_agent: "subject" }, {}, { timeoutMs: 5000 })));
    expect(peak).toBe(3);
  });

  test("queued work is served by priority: an urgent request overtakes a backlog", async () => {
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { client, runtime } = await actorWithClient(
      defineActor({
        async onRequest(request) {
          if (request.payload.gate) await gate;
          order.push(String(request.payload.name));
          return {};
        },
      }),
    );
    const all = [client.request({ target_agent: "subject" }, { gate: true, name: "first" })];
    await waitFor(() => runtime.load.inFlight === 1, "the first handler to run");
    for (const name of ["r1", "r2", "r3"]) all.push(client.request({ target_agent: "subject" }, { name }, { priority: 2 }));
    await waitFor(() => runtime.load.queueDepth === 3, "the backlog");
    all.push(client.request({ target_agent: "subject" }, { name: "urgent" }, { priority: 9 }));
    await waitFor(() => runtime.load.queueDepth === 4, "the urgent one to queue");
    release();
    await Promise.all(all);
    expect(order).toEqual(["first", "urgent", "r1", "r2", "r3"]);
  });

  test("a handler that throws answers code 7 and the actor keeps serving", async () => {
    const { client } = await actorWithClient(
      defineActor({
        onRequest(request) {
          if (request.payload.plain) throw new Error("plain failure");
          return { fine: true };
        },
      }),
    );
    const plain = await client.request({ target_agent: "subject" }, { plain: true }).catch((e) => e);
    expect(plain.code).toBe(ErrorCode.INTERNAL);
    expect(plain.message).toBe("plain failure");
    expect((await client.request({ target_agent: "subject" }, {})).payload).toEqual({ fine: true });
  });

  test("a handler past its deadline is answered with code 3 and sees its signal aborted", async () => {
    let aborted = false;
    const { client } = await actorWithClient(
      defineActor({
        async onRequest(_request, ctx) {
          ctx.signal.addEventListener("abort", () => (aborted = true));
          await simulateWork(2000);
          return {};
        },
      }),
    );
    const error = await client.request({ target_agent: "subject" }, {}, { ttl: 100, timeoutMs: 3000 }).catch((e) => e);
    expect(error.code).toBe(ErrorCode.TASK_TIMEOUT);
    await waitFor(() => aborted, "the handler's signal to abort");
  });

  test("messages a handler sends keep the trace and context ids; init state is the handler's state", async () => {
    const seen: Array<{ trace: string; context?: string }> = [];
    const registryNote: string[] = [];
    const { client } = await actorWithClient(
      defineActor({
        init: () => ({ greeting: "hello" }),
        async onRequest(request, ctx) {
          if (request.payload.inner) {
            seen.push({ trace: request.trace_id, context: request.context_id });
            return { inner: true };
          }
          registryNote.push(ctx.state.greeting);
          return ctx.request("subject", { inner: true });
        },
      }),
      2,
    );
    const reply = await client.request({ target_agent: "subject" }, {}, { trace_id: "trace-outer", context_id: "ctx-7" });
    expect(reply.payload).toEqual({ inner: true });
    expect(seen).toEqual([{ trace: "trace-outer", context: "ctx-7" }]);
    expect(registryNote).toEqual(["hello"]);
  });

  test("a handler may destructure its context: functions keep working apart from it, and a spread copies its data", async () => {
    const seen: Array<{ trace: string; context?: string; traceparent?: string }> = [];
    let spread: Record<string, unknown> = {};
    const { client } = await actorWithClient(
      defineActor({
        init: () => ({ calls: 0 }),
        async onRequest(request, ctx) {
          if (request.payload.inner) {
            seen.push({ trace: request.trace_id, context: request.context_id, traceparent: request.headers?.traceparent });
            return { inner: true };
          }
          // Taken off the context, as a handler's parameter list would.
          const { request: ask, state, envelope, address, log, deadline, reply } = ctx;
          state.calls++;
          log.info("asking myself");
          spread = { ...ctx };
          const inner = await ask("subject", { inner: true });
          reply({ ...inner, calls: state.calls, from: address, for: envelope.message_id, deadlineAhead: deadline > Date.now() });
          return { ignored: true };
        },
      }),
      2,
    );
    const reply = await client.request({ target_agent: "subject" }, {}, { trace_id: "trace-outer", context_id: "ctx-9" });
    expect(reply.payload).toMatchObject({ inner: true, calls: 1, from: "subject", deadlineAhead: true });
    expect(reply.payload.for).toBe(reply.correlation_id);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ trace: "trace-outer", context: "ctx-9" });
    // The inner request names the outer handler's span as its parent (the outer message's id, hashed).
    expect(seen[0]!.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(Object.keys(spread).sort()).toEqual(["address", "deadline", "envelope", "instance", "name", "state", "store"]);
  });

  test("a handler may replace a member of its context, wrap it in a Proxy or build on it; its functions keep their identity", async () => {
    const seen: string[] = [];
    const { client } = await actorWithClient(
      defineActor({
        async onRequest(request, ctx) {
          if (request.payload.inner) {
            seen.push(String(request.payload.via));
            return { inner: true };
          }
          const sameFunction = ctx.request === ctx.request && ctx.send === ctx.send;
          // Replaced: later reads get the wrapper, which calls the original.
          const original = ctx.request;
          let wrapped = 0;
          ctx.request = (to, payload, options) => {
            wrapped++;
            return original(to, payload, options);
          };
          await ctx.request("subject", { inner: true, via: "replaced" });
          await new Proxy(ctx, {}).request("subject", { inner: true, via: "proxy" });
          await (Object.create(ctx) as typeof ctx).request("subject", { inner: true, via: "prototype" });
          return { sameFunction, wrapped };
        },
      }),
      2,
    );
    const reply = await client.request({ target_agent: "subject" }, {});
    // The proxy and the object built on the context read the replaced member too.
    expect(reply.payload).toEqual({ sameFunction: true, wrapped: 3 });
    expect(seen).toEqual(["replaced", "proxy", "prototype"]);
  });

  test("a request whose signal was aborted before it is sent is refused at once with code 3, and nothing goes out", async () => {
    let ran = 0;
    const { client, runtime } = await actorWithClient(defineActor({ onRequest: () => (ran++, {}) }));
    const refused = await client.request({ target_agent: "subject" }, {}, { signal: AbortSignal.abort() }).catch((error) => error);
    expect(refused.code).toBe(ErrorCode.TASK_TIMEOUT);
    expect(client.stats.pending).toBe(0);
    // The next request is answered, and it is the only one the actor ever saw.
    await client.request({ target_agent: "subject" }, {});
    await waitFor(() => runtime.load.handled === 1, "the second request handled");
    expect(ran).toBe(1);
  });

  test("a request whose ttl is past setTimeout's range (2^31 ms) is not timed out at once when its handler goes async", async () => {
    const { client } = await actorWithClient(defineActor({ async onRequest() { return { ok: true }; } }));
    const far = 2 ** 31 + 60_000;
    const { result: answer, delays } = await recordTimerDelays(() => client.request({ target_agent: "subject" }, {}, { ttl: far, timeoutMs: 5_000 }));
    expect(answer.payload).toEqual({ ok: true });
    // The handler's deadline timer (its handler went async) is set for the longest delay there is, not one that fires at once.
    expect(delays).toContain(MAX_TIMER_MS);
    expect(Math.max(...delays)).toBeLessThanOrEqual(MAX_TIMER_MS);
  });

  test("the same request sent twice while the first waits (a client's retry through the gateway) gets its one answer twice", async () => {
    let ran = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { client } = await actorWithClient(defineActor({ async onRequest() { ran++; await gate; return { n: ran }; } }));
    const request = createRequest(client.address, { target_agent: "subject" }, {}, { ttl: 5_000 });
    const first = client.requestEnvelope(request, { timeoutMs: 5_000 });
    const second = client.requestEnvelope({ ...request }, { timeoutMs: 5_000 });
    // The retry is not sent again: the first is on its way (another instance must not get it too).
    expect(client.stats.inFlight + client.stats.queued).toBe(1);
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.payload).toEqual({ n: 1 });
    expect(b).toBe(a);
    expect(ran).toBe(1);
    expect(client.stats.pending).toBe(0);
  });
});
