/** The gateway's A2A endpoint over real HTTP, in front of a real mesh, driven by the official SDK's clients (1.0 and 0.3) and raw JSON-RPC. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Role, TaskState, type Message, type Part, type StreamResponse, type Task } from "@a2a-js/sdk";
import { ClientFactory, JsonRpcTransportFactory, type Client } from "@a2a-js/sdk/client";
import { parseLegacyAgentCard } from "@a2a-js/sdk/compat/v0_3/client";
import { newMessageId } from "../../mesh/ids.ts";
import { waitFor } from "../helpers.ts";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";

const MESH = `
mesh:
  name: a2a
supervisor:
  intensity: 5
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
    - actor: calculator
      module: {ACTORS}/calculator.ts
    - actor: refuser
      module: {FIXTURES}/refuser.ts
`;

/** A response body as JSON, untyped: the assertions say what it must hold. */
const json = (response: Response | Promise<Response>): Promise<any> => Promise.resolve(response).then((r) => r.json());

/** A user message as the SDK types it: parts are oneofs (`content.$case`), not `{ text }`. */
function userMessage(content: string | Record<string, unknown>, metadata?: Record<string, unknown>): Message {
  const part: Part = typeof content === "string"
    ? { content: { $case: "text", value: content }, metadata: undefined, filename: "", mediaType: "text/plain" }
    : { content: { $case: "data", value: content }, metadata: undefined, filename: "", mediaType: "application/json" };
  return { messageId: newMessageId(), contextId: "", taskId: "", role: Role.ROLE_USER, parts: [part], metadata, extensions: [], referenceTaskIds: [] };
}

function send(message: Message, returnImmediately = false) {
  return { tenant: "", message, metadata: undefined, configuration: returnImmediately ? { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true } : undefined };
}

function asTask(result: unknown): Task {
  expect(result).toHaveProperty("status");
  return result as Task;
}

/** The data of the first data part, the text of the first text part (typed objects). */
const dataOf = (parts: readonly Part[] | undefined): any => parts?.find((p) => p.content?.$case === "data")?.content?.value;
const textOf = (parts: readonly Part[] | undefined): string | undefined => {
  const part = parts?.find((p) => p.content?.$case === "text");
  return part?.content?.$case === "text" ? part.content.value : undefined;
};

/** A fetch for the SDK's options (its type wants `preconnect`). */
const asFetch = (impl: (input: string | URL | Request, init?: RequestInit) => Promise<Response>): typeof fetch => Object.assign(impl, { preconnect: fetch.preconnect });

/**
 * A 0.3 client as the SDK builds one from the card URL: the card asked for as a 0.3 client asks
 * (no A2A-Version: the 0.3 form) and read by the SDK's 0.3 reader, which sees its one 0.3
 * interface (the SDK's own resolver sends 1.0 and would find the 1.0 interface the 0.3 form also
 * lists); the JSON-RPC transport factory then picks its compat transport. `methods` records the
 * JSON-RPC methods it sent.
 */
async function legacyClient(base: string): Promise<{ client: Client; methods: string[] }> {
  const methods: string[] = [];
  const recording = asFetch(async (input, init) => {
    if (typeof init?.body === "string") methods.push(JSON.parse(init.body).method);
    return fetch(input, init);
  });
  const client = await new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: recording, legacyCompat: { enabled: true } })],
    cardResolver: { resolve: async (url, path) => parseLegacyAgentCard(await json(fetch(new URL(path ?? "/.well-known/agent-card.json", url)))) },
  }).createFromUrl(base);
  return { client, methods };
}

/** The states a stream went through, in order (the task event's, then each status update's). */
function statesOf(events: readonly StreamResponse[]): TaskState[] {
  return events.flatMap((e) => (e.payload?.$case === "task" ? [e.payload.value.status!.state] : e.payload?.$case === "statusUpdate" ? [e.payload.value.status!.state] : []));
}

describe("A2A on the gateway", () => {
  let t: TestMesh;
  let url: string;
  let client: Client;
  const rpc = (body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${url}/a2a`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body), signal });

  beforeAll(async () => {
    t = await startTestMesh(MESH, { gateway: { port: 0 } });
    url = t.mesh.gateway!.url;
    client = await new ClientFactory().createFromUrl(url);
  }, 20_000);
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  }, 20_000);

  test("the card is public, built from the registry: each capability a skill, 1.0 for a 1.0 client and 0.3 without A2A-Version", async () => {
    const v1 = await json(fetch(`${url}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } }));
    expect(v1.supportedInterfaces).toEqual([
      { url: `${url}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      { url: `${url}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "0.3" },
    ]);
    expect(v1.capabilities.streaming).toBe(true);
    expect(v1.securitySchemes).toBeUndefined();
    expect(v1.skills.map((s: { id: string }) => s.id)).toEqual(["calculator", "echo", "refuser"]);
    expect(v1.skills[0]).toMatchObject({ id: "calculator", name: "calculator", description: expect.stringContaining("arithmetic"), tags: ["hermes-mesh", "actor:calculator"], inputModes: ["text/plain", "application/json"] });
    const legacy = await json(fetch(`${url}/.well-known/agent-card.json`));
    expect(legacy).toMatchObject({ protocolVersion: "0.3.0", url: `${url}/a2a`, preferredTransport: "JSONRPC", capabilities: { streaming: true } });
    expect(parseLegacyAgentCard(legacy).skills.map((s) => s.id)).toEqual(["calculator", "echo", "refuser"]);
    // The SDK client found the 1.0 interface on it.
    expect(client.protocolVersion).toBe("1.0");
  });

  test("SendMessage: the text '2+2' reaches the calculator as { expression }, and the task completes with 4 (typed and on the wire)", async () => {
    const task = asTask(await client.sendMessage(send(userMessage("2+2", { skill: "calculator" }))));
    expect(task.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(dataOf(task.artifacts[0]!.parts)).toEqual({ result: 4, expression: "2+2" });
    expect(textOf(task.artifacts[0]!.parts)).toBe("4");
    expect(task.metadata!.hermes).toMatchObject({ skill: "calculator", trace_id: task.id, message_id: expect.stringMatching(/^[0-9A-Z]{26}$/) });
    // On the wire parts are { text } and { data }.
    const raw = await json(rpc({ jsonrpc: "2.0", id: 7, method: "SendMessage", params: { message: { messageId: "m-wire", role: "ROLE_USER", parts: [{ text: "3*3" }], metadata: { skill: "calculator" } } } }, { "A2A-Version": "1.0" }));
    expect(raw.id).toBe(7);
    expect(raw.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(raw.result.task.artifacts[0].parts).toEqual([{ data: { result: 9, expression: "3*3" }, mediaType: "application/json" }, { text: "9", mediaType: "text/plain" }]);
    const got = await client.getTask({ tenant: "", id: raw.result.task.id });
    expect(got.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // The dashboard's recent traces list A2A tasks, by their task id (the trace id).
    const traces = (await json(fetch(`${url}/api/overview`))).traces as Array<{ trace_id: string; route: string; target: string; status: string }>;
    expect(traces.find((trace) => trace.trace_id === raw.result.task.id)).toMatchObject({ route: "a2a", target: "capability:calculator", status: "ok" });
  });

  test("SendStreamingMessage: Hermes progress becomes WORKING updates with the progress as data, then COMPLETED", async () => {
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(send(userMessage({ progress: 3, sleep_ms: 20 }, { skill: "echo" })))) events.push(event);
    expect(events[0]!.payload?.$case).toBe("task");
    const states = statesOf(events);
    expect(states[0]).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    const progress = events.flatMap((e) => (e.payload?.$case === "statusUpdate" && e.payload.value.status!.message ? [dataOf(e.payload.value.status!.message.parts)] : []));
    expect(progress.slice(0, 3)).toEqual([{ step: 1 }, { step: 2 }, { step: 3 }]);
    expect(states.filter((s) => s === TaskState.TASK_STATE_WORKING).length).toBeGreaterThanOrEqual(3);
    const artifact = events.find((e) => e.payload?.$case === "artifactUpdate");
    expect(artifact?.payload?.$case === "artifactUpdate" && dataOf(artifact.payload.value.artifact!.parts)).toEqual({ progress: 3, sleep_ms: 20 });
  });

  test("a streaming client that goes away leaves its task running to the end: GetTask then finds it COMPLETED", async () => {
    const gone = new AbortController();
    const response = await rpc({ jsonrpc: "2.0", id: 1, method: "SendStreamingMessage", params: { message: { messageId: "gone", role: "ROLE_USER", parts: [{ data: { sleep_ms: 200 } }], metadata: { skill: "echo" } } } }, { "A2A-Version": "1.0" }, gone.signal);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const { value } = await response.body!.getReader().read();
    const first = JSON.parse(new TextDecoder().decode(value).split("\n\n")[0]!.replace(/^data: /, ""));
    const id: string = first.result.task.id;
    gone.abort();
    await waitFor(async () => (await client.getTask({ tenant: "", id })).status!.state === TaskState.TASK_STATE_COMPLETED, "the task to complete without its client", 10_000);
  });

  test("CancelTask aborts the Hermes request: the stream and the task end CANCELED, long before the actor's 30 s", async () => {
    const t0 = performance.now();
    const events: StreamResponse[] = [];
    let canceled: Task | undefined;
    const echo = () => t.mesh.registry.byAddress("echo")!.inFlight;
    for await (const event of client.sendMessageStream(send(userMessage({ sleep_ms: 30_000 }, { skill: "echo" })))) {
      events.push(event);
      if (event.payload?.$case === "task") {
        await waitFor(() => echo() === 1, "the echo actor busy with the task", 10_000);
        canceled = await client.cancelTask({ tenant: "", id: event.payload.value.id, metadata: undefined });
      }
    }
    expect(canceled!.status!.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(statesOf(events).at(-1)).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await client.getTask({ tenant: "", id: canceled!.id })).status!.state).toBe(TaskState.TASK_STATE_CANCELED);
    // The actor got the Hermes cancel: echo stops sleeping only when cancelled, else it would stay busy for 30 s.
    await waitFor(() => echo() === 0, "the echo actor free again", 10_000);
    expect(performance.now() - t0).toBeLessThan(20_000);
  });

  test("a Hermes error is FAILED keeping code and detail; code 8 is REJECTED, code 5 AUTH_REQUIRED", async () => {
    const failed = asTask(await client.sendMessage(send(userMessage("1/0", { skill: "calculator" }))));
    expect(failed.status!.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(dataOf(failed.status!.message!.parts)).toMatchObject({ error_code: 2, error_name: "INVALID_REQUEST", reason: expect.stringContaining("division by zero") });
    expect(textOf(failed.status!.message!.parts)).toContain("INVALID_REQUEST (2)");
    expect(failed.metadata!.hermes).toMatchObject({ error_code: 2 });
    const rejected = asTask(await client.sendMessage(send(userMessage({ code: 8 }, { skill: "refuser" }))));
    expect(rejected.status!.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(dataOf(rejected.status!.message!.parts)).toMatchObject({ error_code: 8, asked: 8 });
    const auth = asTask(await client.sendMessage(send(userMessage({ code: 5 }, { skill: "refuser" }))));
    expect(auth.status!.state).toBe(TaskState.TASK_STATE_AUTH_REQUIRED);
    // AUTH_REQUIRED is not final: a follow-up message on the task runs it again (with the same skill).
    const retried = asTask(await client.sendMessage(send({ ...userMessage({}), taskId: auth.id })));
    expect(retried.id).toBe(auth.id);
    expect(retried.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(dataOf(retried.artifacts[0]!.parts)).toEqual({ ok: true });
  });

  test("an unknown skill, or none among several, is a JSON-RPC error listing the known ones; no task is made", async () => {
    const count = async () => (await client.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: "", statusTimestampAfter: undefined, pageSize: 1 })).totalSize;
    const before = await count();
    await expect(client.sendMessage(send(userMessage("2+2", { skill: "nope" })))).rejects.toThrow("unknown skill 'nope': the skills are calculator, echo, refuser");
    await expect(client.sendMessage(send(userMessage("2+2")))).rejects.toThrow("set message.metadata.skill to one of calculator, echo, refuser");
    const raw = await json(rpc({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "x" }], metadata: { skill: "nope" } } } }, { "A2A-Version": "1.0" }));
    expect(raw.error.code).toBe(-32602);
    expect(raw.error.data[0].metadata).toMatchObject({ hermes_error_code: "4", skills: "calculator,echo,refuser" });
    const streamed = await json(rpc({ jsonrpc: "2.0", id: 2, method: "SendStreamingMessage", params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "x" }], metadata: { skill: "nope" } } } }, { "A2A-Version": "1.0" }));
    expect(streamed.error).toMatchObject({ code: -32602, message: expect.stringContaining("calculator, echo, refuser") });
    expect(await count()).toBe(before);
  });

  test("SubscribeToTask gets the task snapshot first, then the live updates", async () => {
    const started = asTask(await client.sendMessage(send(userMessage({ sleep_ms: 30_000 }, { skill: "echo" }), true)));
    const events: StreamResponse[] = [];
    let cancel: Promise<Task> | undefined;
    for await (const event of client.resubscribeTask({ tenant: "", id: started.id })) {
      events.push(event);
      cancel ??= client.cancelTask({ tenant: "", id: started.id, metadata: undefined });
    }
    await cancel;
    expect(events[0]!.payload?.$case).toBe("task");
    expect(events[0]!.payload?.$case === "task" && events[0]!.payload.value.id).toBe(started.id);
    expect(statesOf(events).at(-1)).toBe(TaskState.TASK_STATE_CANCELED);
    // A finished task has nothing to subscribe to: a JSON-RPC error, not an empty stream.
    await expect(collect(client.resubscribeTask({ tenant: "", id: started.id }))).rejects.toThrow(/terminal state/);
  });

  test("a task takes 16 subscribers (then -32000, RESOURCE_EXHAUSTED); a subscriber whose client disconnects frees its place at once", async () => {
    const started = asTask(await client.sendMessage(send(userMessage({ sleep_ms: 30_000 }, { skill: "echo" }), true)));
    const subscribe = (signal?: AbortSignal) => rpc({ jsonrpc: "2.0", id: 9, method: "SubscribeToTask", params: { id: started.id } }, { "A2A-Version": "1.0" }, signal);
    const gone = new AbortController();
    const probe = new AbortController();
    try {
      // Each answers once it has the task's snapshot: by then it counts.
      const streams = await Promise.all(Array.from({ length: 16 }, () => subscribe(gone.signal)));
      expect(streams.map((r) => r.headers.get("content-type"))).toEqual(Array(16).fill("text/event-stream"));
      const refused = await json(subscribe());
      expect(refused.error).toMatchObject({ code: -32000, message: expect.stringMatching(/^RESOURCE_EXHAUSTED \(6\): task .* has 16 subscribers/) });
      // The task runs on for 30 s: only the clients going away can free the places.
      gone.abort();
      await waitFor(async () => (await subscribe(probe.signal)).headers.get("content-type") === "text/event-stream", "a place for a new subscriber", 10_000);
    } finally {
      probe.abort();
      await client.cancelTask({ tenant: "", id: started.id, metadata: undefined });
    }
  });

  test("a finished task cannot be cancelled (-32002), and a running one takes no further message (-32004)", async () => {
    const done = asTask(await client.sendMessage(send(userMessage("1+1", { skill: "calculator" }))));
    await expect(client.cancelTask({ tenant: "", id: done.id, metadata: undefined })).rejects.toThrow();
    expect((await json(rpc({ jsonrpc: "2.0", id: 1, method: "CancelTask", params: { id: done.id } }, { "A2A-Version": "1.0" }))).error.code).toBe(-32002);
    const running = asTask(await client.sendMessage(send(userMessage({ sleep_ms: 30_000 }, { skill: "echo" }), true)));
    try {
      const again = await json(rpc({ jsonrpc: "2.0", id: 2, method: "SendMessage", params: { message: { messageId: "m-again", taskId: running.id, role: "ROLE_USER", parts: [{ data: {} }] } } }, { "A2A-Version": "1.0" }));
      expect(again.error).toMatchObject({ code: -32004, message: expect.stringContaining("still running") });
    } finally {
      await client.cancelTask({ tenant: "", id: running.id, metadata: undefined });
    }
  });

  test("a 0.3 client (the SDK's, from the card URL) does the same: message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe", async () => {
    const { client: legacy, methods } = await legacyClient(url);
    expect(legacy.protocolVersion).toBe("0.3");
    const task = asTask(await legacy.sendMessage(send(userMessage("2+2", { skill: "calculator" }))));
    expect(task.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(dataOf(task.artifacts[0]!.parts)).toEqual({ result: 4, expression: "2+2" });
    expect((await legacy.getTask({ tenant: "", id: task.id })).status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const streamed = await collect(legacy.sendMessageStream(send(userMessage({ progress: 2 }, { skill: "echo" }))));
    expect(statesOf(streamed)).toContain(TaskState.TASK_STATE_WORKING);
    expect(statesOf(streamed).at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    const events: StreamResponse[] = [];
    for await (const event of legacy.sendMessageStream(send(userMessage({ sleep_ms: 30_000 }, { skill: "echo" })))) {
      events.push(event);
      if (event.payload?.$case === "task") expect((await legacy.cancelTask({ tenant: "", id: event.payload.value.id, metadata: undefined })).status!.state).toBe(TaskState.TASK_STATE_CANCELED);
    }
    expect(statesOf(events).at(-1)).toBe(TaskState.TASK_STATE_CANCELED);
    const failed = asTask(await legacy.sendMessage(send(userMessage("1/0", { skill: "calculator" }))));
    expect(failed.status!.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(dataOf(failed.status!.message!.parts)).toMatchObject({ error_code: 2 });
    await expect(legacy.sendMessage(send(userMessage("2+2", { skill: "nope" })))).rejects.toThrow("calculator, echo, refuser");
    // tasks/resubscribe: the task first, then its updates to the end.
    const started = asTask(await legacy.sendMessage(send(userMessage({ sleep_ms: 30_000 }, { skill: "echo" }), true)));
    const resubscribed: StreamResponse[] = [];
    let cancel: Promise<Task> | undefined;
    for await (const event of legacy.resubscribeTask({ tenant: "", id: started.id })) {
      resubscribed.push(event);
      cancel ??= legacy.cancelTask({ tenant: "", id: started.id, metadata: undefined });
    }
    expect((await cancel)!.status!.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(resubscribed[0]!.payload?.$case === "task" && resubscribed[0]!.payload.value.id).toBe(started.id);
    expect(statesOf(resubscribed).at(-1)).toBe(TaskState.TASK_STATE_CANCELED);
    expect(new Set(methods)).toEqual(new Set(["message/send", "tasks/get", "message/stream", "tasks/cancel", "tasks/resubscribe"]));
    // The 0.3 wire form: kind-tagged parts and lower-case states.
    const raw = await json(rpc({ jsonrpc: "2.0", id: "w", method: "message/send", params: { message: { kind: "message", messageId: "m03", role: "user", parts: [{ kind: "text", text: "5-1" }], metadata: { skill: "calculator" } } } }));
    expect(raw.result).toMatchObject({ kind: "task", status: { state: "completed" } });
    expect(raw.result.artifacts[0].parts).toEqual([{ kind: "data", data: { result: 4, expression: "5-1" } }, { kind: "text", text: "4" }]);
  });

  test("the card and /a2a refuse a foreign Host or a foreign browser Origin as every route does (403, code 5)", async () => {
    const port = new URL(url).port;
    const card = `${url}/.well-known/agent-card.json`;
    const getTask = { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } };
    for (const response of [await fetch(card, { headers: { host: "rebind.evil.example" } }), await rpc(getTask, { host: `rebind.evil.example:${port}`, "A2A-Version": "1.0" })]) {
      expect(response.status).toBe(403);
      expect(await json(response)).toMatchObject({ error_code: 5, auth_method: "host", host: expect.stringContaining("rebind.evil.example") });
    }
    for (const response of [await fetch(card, { headers: { origin: "https://evil.example" } }), await rpc(getTask, { origin: "https://evil.example", "A2A-Version": "1.0" })]) {
      expect(response.status).toBe(403);
      expect(await json(response)).toMatchObject({ error_code: 5, auth_method: "origin", origin: "https://evil.example" });
    }
    // From its own origin, both are served.
    expect((await fetch(card, { headers: { origin: url } })).status).toBe(200);
    expect((await json(rpc(getTask, { origin: url, "A2A-Version": "1.0" }))).error.code).toBe(-32001);
  });

  test("malformed JSON-RPC gets JSON-RPC errors: -32700, -32600, -32601, -32602, -32009, and 415 for another content type", async () => {
    expect((await json(rpc("{not json"))).error.code).toBe(-32700);
    expect((await json(rpc([{ jsonrpc: "2.0", id: 1, method: "GetTask" }]))).error.code).toBe(-32600);
    expect((await json(rpc({ jsonrpc: "1.0", id: 1, method: "GetTask", params: {} }))).error).toMatchObject({ code: -32600 });
    expect((await json(rpc({ jsonrpc: "2.0", id: { x: 1 }, method: "GetTask" }))).error.code).toBe(-32600);
    expect((await json(rpc({ jsonrpc: "2.0", id: 1, params: {} }))).error.code).toBe(-32600);
    const unknown = await json(rpc({ jsonrpc: "2.0", id: 3, method: "tasks/explode", params: {} }));
    expect(unknown).toMatchObject({ id: 3, error: { code: -32601, message: expect.stringContaining("SendMessage") } });
    expect((await json(rpc({ jsonrpc: "2.0", id: 4, method: "GetTask", params: [1] }, { "A2A-Version": "1.0" }))).error.code).toBe(-32602);
    expect((await json(rpc({ jsonrpc: "2.0", id: 5, method: "GetTask", params: { id: "no-such-task" } }, { "A2A-Version": "1.0" }))).error.code).toBe(-32001);
    expect((await json(rpc({ jsonrpc: "2.0", id: 6, method: "GetTask", params: { id: "x" } }, { "A2A-Version": "9.9" }))).error.code).toBe(-32009);
    const nested = `{"jsonrpc":"2.0","id":8,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":${"{\"a\":".repeat(5000)}1${"}".repeat(5000)}}]}}}`;
    expect((await json(rpc(nested))).error).toMatchObject({ code: -32600, message: expect.stringContaining("nests deeper than") });
    const wrongType = await fetch(`${url}/a2a`, { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" });
    expect(wrongType.status).toBe(415);
    expect((await json(wrongType)).error.code).toBe(-32600);
  });

  // Last: it restarts the gateway (a new port).
  test("task state survives the gateway being killed (kill -9) and restarted by its supervisor: GetTask still answers", async () => {
    const done = asTask(await client.sendMessage(send(userMessage("6*7", { skill: "calculator" }))));
    // The actor gives up at the task's deadline (timeout_ms), so the mesh stops without waiting for it.
    const running = asTask(await client.sendMessage(send(userMessage({ sleep_ms: 60_000 }, { skill: "echo", timeout_ms: 3000 }), true)));
    expect(running.status!.state).not.toBe(TaskState.TASK_STATE_FAILED);
    const gateway = t.mesh.registry.byAddress("gateway")!;
    const oldUrl = t.mesh.gateway!.url;
    process.kill(gateway.pid!, "SIGKILL");
    await waitFor(() => {
      const entry = t.mesh.registry.byAddress("gateway");
      return entry?.pid !== gateway.pid && entry?.health === "healthy" && t.mesh.gateway!.url !== oldUrl;
    }, "the gateway to be restarted", 20_000);
    const after = await new ClientFactory().createFromUrl(t.mesh.gateway!.url);
    const kept = await after.getTask({ tenant: "", id: done.id });
    expect(kept.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(dataOf(kept.artifacts[0]!.parts)).toEqual({ result: 42, expression: "6*7" });
    // The request of the task that was running went with the old process: it is FAILED with code 10, not WORKING forever.
    const lost = await after.getTask({ tenant: "", id: running.id });
    expect(lost.status!.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(dataOf(lost.status!.message!.parts)).toMatchObject({ error_code: 10, error_name: "UNAVAILABLE" });
  }, 30_000);
});

describe("A2A on a gateway with a token and one skill", () => {
  const TOKEN = "a2a-test-token";
  let t: TestMesh;
  let url: string;

  beforeAll(async () => {
    t = await startTestMesh(`
mesh:
  name: a2a-token
supervisor:
  children:
    - actor: calculator
      module: {ACTORS}/calculator.ts
`, { gateway: { port: 0, token: TOKEN } });
    url = t.mesh.gateway!.url;
  }, 20_000);
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  }, 20_000);

  test("the card stays public and names the bearer scheme; /a2a wants the token; the only skill needs no naming", async () => {
    const v1 = await json(fetch(`${url}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } }));
    expect(v1.securitySchemes).toEqual({ bearer: { httpAuthSecurityScheme: { scheme: "Bearer", description: expect.any(String) } } });
    expect(v1.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
    const legacy = await json(fetch(`${url}/.well-known/agent-card.json`));
    expect(legacy.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(legacy.security).toEqual([{ bearer: [] }]);
    const refused = await fetch(`${url}/a2a`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }) });
    expect(refused.status).toBe(401);
    const withToken = asFetch((input, init) => {
      const headers = new Headers(init?.headers);
      headers.set("authorization", `Bearer ${TOKEN}`);
      return fetch(input, { ...init, headers });
    });
    const client = await new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: withToken })] }).createFromUrl(url);
    const task = asTask(await client.sendMessage(send(userMessage("2^10"))));
    expect(task.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task.artifacts[0]!.parts)).toBe("1024");
  });
});

async function collect(events: AsyncGenerator<StreamResponse, void, undefined>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const event of events) out.push(event);
  return out;
}
