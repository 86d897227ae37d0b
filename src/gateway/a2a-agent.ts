/**
 * The mesh as one A2A agent, on `@a2a-js/sdk`: an AgentExecutor that runs each task as a Hermes
 * request, the SDK's request handler around it (admitting only messages that name a known skill,
 * within A2A_LIMITS), and its JSON-RPC transports for A2A 1.0 and 0.3. Loaded by a2a-endpoint.ts on the first A2A
 * request, so neither the SDK nor the task store costs the gateway anything before.
 */
import { Buffer } from "node:buffer";
import { join } from "node:path";
import type { TraceSummary } from "./recent-traces.ts";
import {
  AgentCard, TaskState,
  type CancelTaskRequest, type GetTaskRequest, type ListTasksRequest, type ListTasksResponse, type Message, type SendMessageRequest,
  type StreamResponse, type SubscribeToTaskRequest, type Task, type TaskStatus,
} from "@a2a-js/sdk";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import { JsonRpcTransportError, RequestMalformedError, TaskNotFoundError, UnsupportedOperationError, type A2AError } from "@a2a-js/sdk/errors";
import {
  DefaultExecutionEventBusManager, DefaultRequestHandler, ExecutionEventQueue, JsonRpcTransportHandler, ServerCallContext,
  type AgentExecutionEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext,
} from "@a2a-js/sdk/server";
import type { MeshNode } from "../../mesh/mesh-node.ts";
import type { Registry } from "../../mesh/registry.ts";
import { ErrorCode, errorName, HermesError } from "../../mesh/errors.ts";
import { newRequest } from "../../mesh/requests.ts";
import { agentCard, skillsOf } from "./a2a-card.ts";
import { agentMessage, errorParts, payloadParts, progressParts, stateOfError, taskInput, textPart, type TaskInput } from "./a2a-mapping.ts";
import { SqliteTaskStore, type TaskStoreLimits } from "./a2a-task-store.ts";

/** What the agent uses of the gateway's mesh node: its address, and requests with progress and cancel. */
export type A2AMesh = Pick<MeshNode, "address" | "requestEnvelope">;

/** What the A2A agent needs from the gateway. */
export interface A2AServerDeps {
  node: A2AMesh;
  registry: Registry;
  meshName: string;
  version: string;
  /** The mesh directory: tasks are kept in `<dir>/data/a2a-tasks.db` (in memory without one). */
  dir?: string;
  /** Other limits than the defaults of A2A_LIMITS (tests). */
  limits?: Partial<A2ALimits>;
  /** Other bounds of the task store than its defaults (tests). */
  store?: TaskStoreLimits;
  /** Told of every task's request once it is over (the dashboard's recent traces). */
  onFinished?: (summary: TraceSummary) => void;
}

/** What one client may ask of the agent at most: past these a request is refused before any task is made. */
export interface A2ALimits {
  /** Tasks running at once (a request sent, its answer not back): the next message is refused with RESOURCE_EXHAUSTED. */
  maxRunning: number;
  /** Open SubscribeToTask (tasks/resubscribe) streams per task. */
  maxSubscribers: number;
  /** Characters of a taskId, contextId or messageId (and of the id of GetTask, CancelTask, SubscribeToTask): -32602 past it. */
  maxIdLength: number;
  /** Entries of a message's `referenceTaskIds`: -32602 past it. */
  maxReferenceTasks: number;
  /** Bytes of JSON of a message's metadata, and of the request's: -32602 past it. */
  maxMetadataBytes: number;
}

/** The limits of docs/interop.md. */
export const A2A_LIMITS: Readonly<A2ALimits> = { maxRunning: 1000, maxSubscribers: 16, maxIdLength: 256, maxReferenceTasks: 16, maxMetadataBytes: 16 * 1024 };

/**
 * The JSON-RPC code of a RESOURCE_EXHAUSTED refusal (too many tasks running, or subscribers on a
 * task): A2A has none of its own, so the first of JSON-RPC's implementation-defined server
 * errors, outside A2A's -32001 to -32009. Its message starts with `RESOURCE_EXHAUSTED (6)`.
 */
export const RESOURCE_EXHAUSTED_RPC_CODE = -32000;

/** One JSON-RPC call, answered: a response object, or the stream of them (SSE). */
export type RpcOutcome = { type: "response"; body: unknown } | { type: "stream"; events: AsyncGenerator<unknown, void, undefined> };

/** The A2A agent of a gateway: answers JSON-RPC calls already known to be well-formed (a2a-endpoint.ts). */
export interface A2AServer {
  /**
   * One call. `clientGone` aborts when the client of a stream has disconnected: a subscribe
   * stream then ends (SendStreamingMessage streams are read to their end regardless).
   */
  handle(request: Record<string, unknown>, legacy: boolean, clientGone?: AbortSignal): Promise<RpcOutcome>;
  /** The JSON-RPC error object for something a stream threw, in the 1.0 or the 0.3 shape. */
  rpcError(error: unknown, legacy: boolean): { code: number; message: string; data?: unknown };
  /** How many tasks the store holds (tests, metrics). */
  readonly tasks: SqliteTaskStore;
  close(): void;
}

/** Where the request handler leaves what it admitted (an Admission), for the executor (ServerCallContext.state). */
const ADMITTED = "hermes.admission";
/** Where handle() leaves the client's `clientGone` signal, for subscribe streams. */
const CLIENT_GONE = "hermes.clientGone";
/** The states no further update follows (the SDK's terminal states). */
const FINAL_STATES: readonly TaskState[] = [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED];

/**
 * A message the handler let through, until its request is over: counted against `maxRunning` from
 * the moment it is admitted (synchronously, so two messages at once cannot both pass), and
 * claiming its task id, which a follow-up names or execute() learns.
 */
interface Admission {
  input: TaskInput;
  taskId: string | undefined;
  controller: AbortController;
  /** execute() took it over: its finally releases it. */
  started: boolean;
}

/**
 * Builds the A2A agent: the task store (marking the tasks a previous gateway process was running
 * as FAILED with code 10, since their answers went to a process that is gone), the executor and
 * both transports.
 *
 * @example
 * const a2a = createA2AServer({ node, registry, meshName: "demo", version: VERSION, dir });
 * const outcome = await a2a.handle({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id } }, false);
 */
export function createA2AServer(deps: A2AServerDeps): A2AServer {
  const tasks = SqliteTaskStore.open(deps.dir ? join(deps.dir, "data", "a2a-tasks.db") : ":memory:", deps.store);
  failInterrupted(tasks);
  const limits = { ...A2A_LIMITS, ...deps.limits };
  const executor = new MeshAgentExecutor(deps.node, deps.registry, limits.maxRunning, deps.onFinished);
  // The card the handler checks capabilities against; the one served is built per request (a2a-card.ts).
  const card = AgentCard.fromJSON(agentCard([], { url: "http://localhost/a2a", meshName: deps.meshName, version: deps.version, bearer: false }));
  // No state keeps a task's bus alive once its request is over: AUTH_REQUIRED ends the stream,
  // and a follow-up message on the task starts a new request.
  const handler = new MeshRequestHandler(card, tasks, executor, deps.registry, limits);
  const v1 = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);
  return {
    tasks,
    async handle(request, isLegacy, clientGone) {
      const context = new ServerCallContext({ requestedVersion: isLegacy ? "0.3" : "1.0" });
      if (clientGone) context.state.set(CLIENT_GONE, clientGone);
      const outcome = await (isLegacy ? legacy : v1).handle(request, context);
      if (typeof (outcome as AsyncGenerator<unknown>)[Symbol.asyncIterator] === "function") return { type: "stream", events: outcome as AsyncGenerator<unknown, void, undefined> };
      return { type: "response", body: outcome };
    },
    rpcError: (error, isLegacy) => (isLegacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error) : JsonRpcTransportHandler.mapToJSONRPCError(error)),
    close: () => tasks.close(),
  };
}

/** Each task is one Hermes request by capability; its progress, answer, error or cancel become the task's updates. */
class MeshAgentExecutor implements AgentExecutor {
  readonly #node: A2AMesh;
  readonly #registry: Registry;
  readonly #maxRunning: number;
  readonly #onFinished: ((summary: TraceSummary) => void) | undefined;
  /** Every message admitted whose request is not over, with or without a task id yet. */
  readonly #admitted = new Set<Admission>();
  /** The same, by task id: a follow-up finds its task busy here, and cancelTask the request to abort. */
  readonly #byTask = new Map<string, Admission>();

  constructor(node: A2AMesh, registry: Registry, maxRunning: number, onFinished?: (summary: TraceSummary) => void) {
    this.#node = node;
    this.#registry = registry;
    this.#maxRunning = maxRunning;
    this.#onFinished = onFinished;
  }

  /**
   * Takes a place for a message, synchronously (before any await of the SDK): refused when its
   * task is busy, or when `maxRunning` requests are. A follow-up names its task; a new task's id
   * is known in execute().
   */
  admit(input: TaskInput, taskId: string | undefined): Admission {
    if (taskId !== undefined && this.#byTask.has(taskId)) {
      throw new UnsupportedOperationError(`task ${taskId} is still running: wait for it (GetTask, SubscribeToTask) or cancel it (CancelTask) before sending it another message`);
    }
    if (this.#admitted.size >= this.#maxRunning) {
      throw resourceExhausted(`${this.#maxRunning} A2A tasks are running, the most this gateway runs at once: send the message again when one has finished`, "a2a_running_tasks", this.#maxRunning);
    }
    const admission: Admission = { input, taskId, controller: new AbortController(), started: false };
    this.#admitted.add(admission);
    if (taskId !== undefined) this.#byTask.set(taskId, admission);
    return admission;
  }

  /** Gives the place back (a second call does nothing). */
  release(admission: Admission): void {
    this.#admitted.delete(admission);
    if (admission.taskId !== undefined && this.#byTask.get(admission.taskId) === admission) this.#byTask.delete(admission.taskId);
  }

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    const publish = (event: AgentExecutionEvent) => bus.publish(event);
    const update = (state: TaskState, message?: Message, metadata?: Record<string, unknown>) =>
      publish({ kind: "statusUpdate", data: { taskId, contextId, status: status(state, message), metadata } });
    let admission = ctx.context.state.get(ADMITTED) as Admission | undefined;
    try {
      // The SDK runs execute() only for a message the handler admitted; without one (another caller), admit it here.
      admission ??= this.admit(taskInput(ctx.userMessage, ctx.request.metadata, skillsOf(this.#registry), priorSkill(ctx.task)), taskId);
    } catch (error) {
      // Not through the handler, and it cannot run (or run now): the task exists only to say why it failed.
      const coded = HermesError.from(error);
      publish({ kind: "task", data: newTask(taskId, contextId, { error_code: coded.code }) });
      update(TaskState.TASK_STATE_FAILED, agentMessage(taskId, contextId, errorParts(coded), errorMeta(coded)));
      return;
    }
    admission.started = true;
    if (admission.taskId === undefined) {
      admission.taskId = taskId;
      this.#byTask.set(taskId, admission);
    }
    const { input, controller } = admission;
    try {
      // The task id is the request's trace id: the dashboard's trace view (/api/trace/<task id>) finds it.
      const { request, timeoutMs } = newRequest(this.#node.address, { capability: input.skill }, input.payload, {
        trace_id: taskId, context_id: contextId, timeoutMs: input.timeoutMs,
      });
      const hermes = { skill: input.skill, message_id: request.message_id, trace_id: taskId, context_id: contextId };
      publish({ kind: "task", data: newTask(taskId, contextId, hermes, ctx.task) });
      const [at, t0] = [Date.now(), performance.now()];
      const finished = (errorCode?: number) =>
        this.#onFinished?.({
          trace_id: taskId, at, route: "a2a", target: `capability:${input.skill}`, duration_ms: Math.round((performance.now() - t0) * 1000) / 1000,
          status: errorCode === undefined ? "ok" : "error", ...(errorCode !== undefined && { error_code: errorCode }),
        });
      try {
        update(TaskState.TASK_STATE_WORKING);
        let step = 0;
        const answer = await this.#node.requestEnvelope(request, {
          timeoutMs,
          signal: controller.signal,
          onProgress: (payload) => update(TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, progressParts(payload), { hermes_progress: ++step })),
        });
        publish({
          kind: "artifactUpdate",
          data: { taskId, contextId, append: false, lastChunk: true, metadata: undefined, artifact: { artifactId: "answer", name: "answer", description: `The answer of '${input.skill}'`, parts: payloadParts(answer.payload), metadata: undefined, extensions: [] } },
        });
        const parts = payloadParts(answer.payload).filter((p) => p.content?.$case === "text");
        update(TaskState.TASK_STATE_COMPLETED, parts.length ? agentMessage(taskId, contextId, parts) : undefined);
        finished();
      } catch (error) {
        const coded = HermesError.from(error);
        finished(coded.code);
        const meta = { hermes: { ...hermes, error_code: coded.code, error_name: errorName(coded.code) } };
        if (controller.signal.aborted) update(TaskState.TASK_STATE_CANCELED, agentMessage(taskId, contextId, [textPart("canceled: the Hermes request was cancelled")]), meta);
        else update(stateOfError(coded.code), agentMessage(taskId, contextId, errorParts(coded), errorMeta(coded)), meta);
      }
    } finally {
      this.release(admission);
    }
  }

  /** Aborting the request sends the actor a Hermes cancel; execute() then publishes CANCELED. */
  async cancelTask(taskId: string): Promise<void> {
    this.#byTask.get(taskId)?.controller.abort();
  }
}

/**
 * The SDK's request handler, refusing before any task exists what cannot run: a message naming
 * an unknown skill (or none, among several), or one without a usable part, is a JSON-RPC error
 * (-32602 listing the skills), as are ids, metadata and `referenceTaskIds` past A2ALimits; a
 * message on a task still running is refused (-32004), and one past `maxRunning` tasks running
 * is RESOURCE_EXHAUSTED. SubscribeToTask is its own: at most `maxSubscribers` per task, and a
 * stream whose client has gone stops reading the task's updates.
 */
class MeshRequestHandler extends DefaultRequestHandler {
  readonly #tasks: SqliteTaskStore;
  readonly #executor: MeshAgentExecutor;
  readonly #registry: Registry;
  readonly #limits: A2ALimits;
  readonly #buses: DefaultExecutionEventBusManager;
  /** Open subscribe streams by task id. */
  readonly #subscribers = new Map<string, number>();

  constructor(card: AgentCard, tasks: SqliteTaskStore, executor: MeshAgentExecutor, registry: Registry, limits: A2ALimits) {
    const buses = new DefaultExecutionEventBusManager();
    super(card, tasks, executor, buses, undefined, undefined, undefined, undefined, { keepBusAliveStates: [] });
    this.#tasks = tasks;
    this.#executor = executor;
    this.#registry = registry;
    this.#limits = limits;
    this.#buses = buses;
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    const admission = this.#admit(params, context);
    try {
      return await super.sendMessage(params, context);
    } finally {
      // The SDK refused it before execute() (an unknown or finished task): its place is free again.
      if (admission && !admission.started) this.#executor.release(admission);
    }
  }

  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const admission = this.#admit(params, context);
    try {
      yield* super.sendMessageStream(params, context);
    } finally {
      if (admission && !admission.started) this.#executor.release(admission);
    }
  }

  override async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    this.#checkId(params.id, "id");
    return super.getTask(params, context);
  }

  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    this.#checkId(params.id, "id");
    return super.cancelTask(params, context);
  }

  override async listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    if (params.contextId) this.#checkId(params.contextId, "contextId");
    return super.listTasks(params, context);
  }

  /**
   * The task as it is, then its live updates, as the SDK's resubscribe; but counted (at most
   * `maxSubscribers` per task), and ended when the client's `clientGone` signal aborts, so a
   * client that has gone no longer holds a reader on the task until it finishes.
   */
  override async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const taskId = params.id;
    if (!taskId?.trim()) throw new RequestMalformedError("Task ID is required");
    this.#checkId(taskId, "id");
    const task = this.#tasks.loadNow(taskId);
    if (!task) throw new TaskNotFoundError(`Task not found: ${taskId}`);
    const state = task.status?.state;
    if (state !== undefined && FINAL_STATES.includes(state)) throw new UnsupportedOperationError(`Task ${taskId} is in a terminal state (${state}) and cannot be subscribed to.`);
    const open = this.#subscribers.get(taskId) ?? 0;
    if (open >= this.#limits.maxSubscribers) {
      throw resourceExhausted(`task ${taskId} has ${open} subscribers, the most it takes: close one, or poll with GetTask`, "a2a_subscribers", this.#limits.maxSubscribers);
    }
    // In the same turn as the load: no update falls between the snapshot and the queue.
    const bus = this.#buses.getByTaskId(taskId, context);
    const queue = bus && new ExecutionEventQueue(bus);
    const gone = context.state.get(CLIENT_GONE) as AbortSignal | undefined;
    const stop = () => queue?.stop();
    gone?.addEventListener("abort", stop, { once: true });
    this.#subscribers.set(taskId, open + 1);
    try {
      yield { payload: { $case: "task", value: task } };
      if (!queue || gone?.aborted) return;
      for await (const event of queue.events()) {
        if (event.kind === "statusUpdate" && event.data.taskId === taskId) yield { payload: { $case: "statusUpdate", value: event.data } };
        else if (event.kind === "artifactUpdate" && event.data.taskId === taskId) yield { payload: { $case: "artifactUpdate", value: event.data } };
        else if (event.kind === "task" && event.data.id === taskId) yield { payload: { $case: "task", value: event.data } };
      }
    } finally {
      gone?.removeEventListener("abort", stop);
      queue?.stop();
      const left = (this.#subscribers.get(taskId) ?? 1) - 1;
      if (left > 0) this.#subscribers.set(taskId, left);
      else this.#subscribers.delete(taskId);
    }
  }

  /** Checks the message against the limits and the registry, and takes its place (MeshAgentExecutor.admit). */
  #admit(params: SendMessageRequest, context: ServerCallContext): Admission | undefined {
    const message = params.message;
    if (!message) return undefined; // The SDK answers that one.
    if (message.messageId) this.#checkId(message.messageId, "message.messageId");
    if (message.taskId) this.#checkId(message.taskId, "message.taskId");
    if (message.contextId) this.#checkId(message.contextId, "message.contextId");
    const references = message.referenceTaskIds ?? [];
    if (references.length > this.#limits.maxReferenceTasks) {
      throw new RequestMalformedError(`message.referenceTaskIds has ${references.length} entries, more than the ${this.#limits.maxReferenceTasks} this endpoint takes`);
    }
    for (const id of references) this.#checkId(id, "message.referenceTaskIds[]");
    this.#checkMetadata(message.metadata, "message.metadata");
    this.#checkMetadata(params.metadata, "metadata");
    const prior = message.taskId ? this.#tasks.loadNow(message.taskId) : undefined;
    let input: TaskInput;
    try {
      input = taskInput(message, params.metadata, skillsOf(this.#registry), priorSkill(prior));
    } catch (error) {
      const coded = HermesError.from(error);
      const known = (coded.fields.available_tools ?? coded.fields.known) as string[] | undefined;
      throw new RequestMalformedError({
        message: coded.message,
        metadata: { hermes_error_code: String(coded.code), hermes_error_name: errorName(coded.code), ...(known && { skills: known.join(",") }) },
      });
    }
    const admission = this.#executor.admit(input, message.taskId || undefined);
    context.state.set(ADMITTED, admission);
    return admission;
  }

  #checkId(id: string, what: string): void {
    if (id.length > this.#limits.maxIdLength) {
      throw new RequestMalformedError(`${what} is ${id.length} characters long, more than the ${this.#limits.maxIdLength} this endpoint takes`);
    }
  }

  #checkMetadata(metadata: Record<string, unknown> | undefined, what: string): void {
    if (metadata === undefined) return;
    const bytes = Buffer.byteLength(JSON.stringify(metadata));
    if (bytes > this.#limits.maxMetadataBytes) {
      throw new RequestMalformedError(`${what} is ${bytes} bytes of JSON, more than the ${this.#limits.maxMetadataBytes} this endpoint takes`);
    }
  }
}

/** After a restart: what the previous process was running has no one to answer it; say so in the task. */
function failInterrupted(tasks: SqliteTaskStore): void {
  const lost = new HermesError(ErrorCode.UNAVAILABLE, "the gateway restarted while this task ran: its answer is lost; send the message again", { retry_after_ms: 0 });
  for (const task of tasks.interrupted()) {
    const message = agentMessage(task.id, task.contextId, errorParts(lost), errorMeta(lost));
    task.status = status(TaskState.TASK_STATE_FAILED, message);
    task.history = [...(task.history ?? []), message];
    task.metadata = { ...task.metadata, hermes: { ...(task.metadata?.hermes as object | undefined), error_code: lost.code, error_name: errorName(lost.code) } };
    tasks.saveNow(task);
  }
}

function newTask(id: string, contextId: string, hermes: Record<string, unknown>, prior?: Task): Task {
  return { id, contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [], metadata: { ...prior?.metadata, hermes } };
}

function status(state: TaskState, message?: Message): TaskStatus {
  return { state, message, timestamp: new Date().toISOString() };
}

function priorSkill(task: Task | undefined): string | undefined {
  const skill = (task?.metadata?.hermes as { skill?: unknown } | undefined)?.skill;
  return typeof skill === "string" ? skill : undefined;
}

function errorMeta(error: HermesError): Record<string, unknown> {
  return { error_code: error.code, error_name: errorName(error.code) };
}

/**
 * A RESOURCE_EXHAUSTED refusal as a JSON-RPC error: code RESOURCE_EXHAUSTED_RPC_CODE, the
 * message `RESOURCE_EXHAUSTED (6): ...`, and (in the 0.3 form, which keeps it) the Hermes error
 * payload as `data`.
 */
function resourceExhausted(detail: string, resource: string, limit: number): A2AError {
  const error = new HermesError(ErrorCode.RESOURCE_EXHAUSTED, detail, { resource, limit });
  return new JsonRpcTransportError({
    jsonrpc: "2.0", id: null,
    error: { code: RESOURCE_EXHAUSTED_RPC_CODE, message: `${errorName(error.code)} (${error.code}): ${detail}`, data: error.toPayload() },
  });
}
