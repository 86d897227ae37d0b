/**
 * The A2A agent in one process (src/gateway/a2a-agent.ts): what it admits and how much, in front
 * of a mesh whose requests wait until the test answers them, through the SDK's own JSON-RPC
 * handlers (`handle()`, as the gateway's route calls it).
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { Envelope, Payload } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { Registry, type RegistryEntry } from "../../mesh/registry.ts";
import { createA2AServer, RESOURCE_EXHAUSTED_RPC_CODE, type A2AMesh, type A2AServer, type A2AServerDeps } from "../../src/gateway/a2a-agent.ts";
import { waitFor } from "../helpers.ts";

/** One request the agent sent: the test answers it, fails it, or sees it cancelled. */
interface HeldCall {
  payload: Payload;
  signal: AbortSignal | undefined;
  answer(payload: Payload): void;
  fail(error: HermesError): void;
}

/** A mesh whose requests wait until the test answers them; an aborted signal (the Hermes cancel) ends one. */
function heldMesh(): { node: A2AMesh; calls: HeldCall[] } {
  const calls: HeldCall[] = [];
  const node: A2AMesh = {
    address: "gateway",
    requestEnvelope(request, options) {
      const done = Promise.withResolvers<Envelope>();
      options.signal?.addEventListener("abort", () => done.reject(new HermesError(ErrorCode.UNKNOWN, "cancelled")), { once: true });
      calls.push({ payload: request.payload, signal: options.signal, answer: (payload) => done.resolve({ ...request, payload }), fail: done.reject });
      return done.promise;
    },
  };
  return { node, calls };
}

function registry(): Registry {
  const entry: RegistryEntry = {
    name: "echo", instance: 0, address: "echo", id: "echo-id", socket: "/tmp/echo.sock", capabilities: ["echo"], subscriptions: [],
    health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 0,
  };
  const r = new Registry();
  r.upsert(entry);
  return r;
}

let open: A2AServer[] = [];
afterEach(() => {
  for (const a2a of open) a2a.close();
  open = [];
});

function start(extra: Partial<A2AServerDeps> = {}): { a2a: A2AServer; calls: HeldCall[] } {
  const mesh = heldMesh();
  const a2a = createA2AServer({ node: mesh.node, registry: registry(), meshName: "unit", version: "0.0.0", ...extra });
  open.push(a2a);
  return { a2a, calls: mesh.calls };
}

let ids = 0;
/** A 1.0 message on the wire: a data part for the echo skill. */
const message = (fields: Record<string, unknown> = {}) => ({ messageId: `m${++ids}`, role: "ROLE_USER", parts: [{ data: { n: ids } }], ...fields });
const sendParams = (fields: Record<string, unknown> = {}, returnImmediately = false) =>
  ({ message: message(fields), ...(returnImmediately && { configuration: { returnImmediately: true } }) });

/** A call answered with one JSON-RPC response (not a stream): its body. */
async function respond(a2a: A2AServer, method: string, params: unknown, legacy = false): Promise<any> {
  const outcome = await a2a.handle({ jsonrpc: "2.0", id: 1, method, params }, legacy);
  if (outcome.type !== "response") throw new Error(`${method} answered with a stream`);
  return outcome.body;
}

/** A streaming call: its events, or the JSON-RPC error it was refused with before the first one. */
async function stream(a2a: A2AServer, method: string, params: unknown, gone?: AbortSignal): Promise<{ events: AsyncGenerator<any, void, undefined>; first: any } | { error: any }> {
  const outcome = await a2a.handle({ jsonrpc: "2.0", id: 2, method, params }, false, gone);
  if (outcome.type !== "stream") return { error: (outcome.body as any).error };
  try {
    const first = await outcome.events.next();
    return { events: outcome.events, first: first.value };
  } catch (error) {
    return { error: a2a.rpcError(error, false) };
  }
}

describe("the A2A agent's admission", () => {
  test("two follow-ups at once on an AUTH_REQUIRED task: one runs, the other is refused (-32004) before it reaches the mesh", async () => {
    const { a2a, calls } = start();
    const asking = respond(a2a, "SendMessage", sendParams({ metadata: { skill: "echo" } }));
    await waitFor(() => calls.length === 1, "the first request");
    calls[0]!.fail(new HermesError(ErrorCode.AUTH_FAILED, "credentials needed"));
    const task = (await asking).result.task;
    expect(task.status.state).toBe("TASK_STATE_AUTH_REQUIRED");
    // Both are handled in the same turn: the first has not reached execute() when the second is admitted.
    const both = [respond(a2a, "SendMessage", sendParams({ taskId: task.id })), respond(a2a, "SendMessage", sendParams({ taskId: task.id }))];
    let settled = 0;
    for (const answer of both) void answer.then(() => settled++);
    await waitFor(() => calls.length === 3 || (calls.length === 2 && settled === 1), "one follow-up running and the other answered");
    for (const call of calls.slice(1)) call.answer({ ok: true });
    const answers = await Promise.all(both);
    const refused = answers.filter((a) => a.error);
    expect(refused).toHaveLength(1);
    expect(refused[0].error).toMatchObject({ code: -32004, message: expect.stringContaining(`task ${task.id} is still running`) });
    expect(answers.find((a) => a.result)!.result.task).toMatchObject({ id: task.id, status: { state: "TASK_STATE_COMPLETED" } });
    expect(calls).toHaveLength(2);
  });

  test("past maxRunning tasks a message is refused RESOURCE_EXHAUSTED (code 6), in 1.0, 0.3 and streaming; a place frees when a task ends or the SDK refuses it", async () => {
    const { a2a, calls } = start({ limits: { maxRunning: 2 } });
    const first = await respond(a2a, "SendMessage", sendParams({ metadata: { skill: "echo" } }, true));
    // A follow-up on a task that does not exist takes a place, and gives it back when the SDK refuses it (-32001).
    expect((await respond(a2a, "SendMessage", sendParams({ taskId: "no-such-task" }))).error.code).toBe(-32001);
    await respond(a2a, "SendMessage", sendParams({}, true));
    expect(calls).toHaveLength(2);
    const refused = await respond(a2a, "SendMessage", sendParams({}, true));
    expect(refused.error).toMatchObject({ code: RESOURCE_EXHAUSTED_RPC_CODE, message: expect.stringMatching(/^RESOURCE_EXHAUSTED \(6\): 2 A2A tasks are running/) });
    const legacy = await respond(a2a, "message/send", { message: { kind: "message", messageId: "m-legacy", role: "user", parts: [{ kind: "data", data: {} }] } }, true);
    expect(legacy.error).toMatchObject({ code: RESOURCE_EXHAUSTED_RPC_CODE, data: { error_code: 6, error_name: "RESOURCE_EXHAUSTED", resource: "a2a_running_tasks", limit: 2 } });
    const streamed = await stream(a2a, "SendStreamingMessage", sendParams());
    expect("error" in streamed && streamed.error.code).toBe(RESOURCE_EXHAUSTED_RPC_CODE);
    expect(calls).toHaveLength(2);
    calls[0]!.answer({ done: true });
    await waitFor(async () => (await respond(a2a, "GetTask", { id: first.result.task.id })).result.status.state === "TASK_STATE_COMPLETED", "the first task to complete");
    expect((await respond(a2a, "SendMessage", sendParams({}, true))).result.task.status.state).not.toBe("TASK_STATE_FAILED");
    expect(calls).toHaveLength(3);
  });

  test("ids past 256 characters, metadata past 16 KiB and more than 16 referenceTaskIds are -32602 saying which; no task is made", async () => {
    const { a2a, calls } = start();
    const long = "x".repeat(257);
    const refusals: Array<[string, unknown, string]> = [
      ["SendMessage", sendParams({ messageId: long }), "message.messageId is 257 characters long, more than the 256"],
      ["SendMessage", sendParams({ taskId: long }), "message.taskId is 257 characters long"],
      ["SendMessage", sendParams({ contextId: long }), "message.contextId is 257 characters long"],
      ["SendMessage", sendParams({ referenceTaskIds: Array.from({ length: 17 }, (_, i) => `t${i}`) }), "message.referenceTaskIds has 17 entries, more than the 16"],
      ["SendMessage", sendParams({ referenceTaskIds: [long] }), "message.referenceTaskIds[] is 257 characters long"],
      ["SendMessage", sendParams({ metadata: { skill: "echo", note: "y".repeat(17 * 1024) } }), "message.metadata is 17"],
      ["SendMessage", { ...sendParams(), metadata: { note: "y".repeat(17 * 1024) } }, "metadata is 17"],
      ["GetTask", { id: long }, "id is 257 characters long"],
      ["CancelTask", { id: long }, "id is 257 characters long"],
      ["ListTasks", { contextId: long }, "contextId is 257 characters long"],
    ];
    for (const [method, params, says] of refusals) {
      expect({ method, error: (await respond(a2a, method, params)).error }).toEqual({ method, error: expect.objectContaining({ code: -32602, message: expect.stringContaining(says) }) });
    }
    const subscribed = await stream(a2a, "SubscribeToTask", { id: long });
    expect("error" in subscribed && subscribed.error).toMatchObject({ code: -32602, message: expect.stringContaining("id is 257 characters long") });
    expect(a2a.tasks.size).toBe(0);
    expect(calls).toHaveLength(0);
    // At the limits it is taken.
    const atLimit = (await respond(a2a, "SendMessage", sendParams({ messageId: "z".repeat(256), contextId: "c".repeat(256) }, true))).result.task;
    expect(atLimit.contextId).toBe("c".repeat(256));
    expect((await respond(a2a, "SendMessage", sendParams({ referenceTaskIds: Array.from({ length: 16 }, () => atLimit.id) }, true))).result.task).toBeDefined();
    expect(calls).toHaveLength(2);
  });

  test("at most maxSubscribers subscribe streams per task; one whose client has gone ends at once and frees its place", async () => {
    const { a2a, calls } = start({ limits: { maxSubscribers: 2 } });
    const task = (await respond(a2a, "SendMessage", sendParams({}, true))).result.task;
    const goneA = new AbortController();
    const a = await stream(a2a, "SubscribeToTask", { id: task.id }, goneA.signal);
    const b = await stream(a2a, "SubscribeToTask", { id: task.id }, new AbortController().signal);
    if (!("events" in a) || !("events" in b)) throw new Error("a subscription was refused");
    expect(a.first.result.task.id).toBe(task.id);
    const third = await stream(a2a, "SubscribeToTask", { id: task.id });
    expect("error" in third && third.error).toMatchObject({ code: RESOURCE_EXHAUSTED_RPC_CODE, message: expect.stringContaining(`task ${task.id} has 2 subscribers`) });
    // The task is still running: only the client going ends this stream.
    const aNext = a.events.next();
    goneA.abort();
    expect(await aNext).toEqual({ done: true, value: undefined });
    const again = await stream(a2a, "SubscribeToTask", { id: task.id });
    expect("events" in again && again.first.result.task.id).toBe(task.id);
    calls[0]!.answer({ ok: true });
    const rest: any[] = [];
    for await (const event of b.events) rest.push(event.result);
    expect(rest.at(-1).statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
  });
});
