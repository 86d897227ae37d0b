/**
 * The mesh as one A2A agent, on `@a2a-js/sdk`: an AgentExecutor that runs each task as a Hermes
 * request, the SDK's request handler around it (admitting only messages that name a known skill),
 * and its JSON-RPC transports for A2A 1.0 and 0.3. Loaded by a2a-endpoint.ts on the first A2A
 * request, so neither the SDK nor the task store costs the gateway anything before.
 */
import { join } from "node:path";
import { AgentCard, TaskState, type Message, type SendMessageRequest, type StreamResponse, type Task, type TaskStatus } from "@a2a-js/sdk";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import { RequestMalformedError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import {
  DefaultRequestHandler, JsonRpcTransportHandler, ServerCallContext,
  type AgentExecutionEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext,
} from "@a2a-js/sdk/server";
import type { MeshNode } from "../../mesh/mesh-node.ts";
import type { Registry } from "../../mesh/registry.ts";
import { ErrorCode, errorName, HermesError } from "../../mesh/errors.ts";
import { newRequest } from "../../mesh/requests.ts";
import { agentCard, skillsOf } from "./a2a-card.ts";
import { agentMessage, errorParts, payloadParts, progressParts, stateOfError, taskInput, textPart, type TaskInput } from "./a2a-mapping.ts";
import { SqliteTaskStore } from "./a2a-task-store.ts";

/** What the A2A agent needs from the gateway. */
export interface A2AServerDeps {
  node: MeshNode;
  registry: Registry;
  meshName: string;
  version: string;
  /** The mesh directory: tasks are kept in `<dir>/data/a2a-tasks.db` (in memory without one). */
  dir?: string;
}

/** One JSON-RPC call, answered: a response object, or the stream of them (SSE). */
export type RpcOutcome = { type: "response"; body: unknown } | { type: "stream"; events: AsyncGenerator<unknown, void, undefined> };

/** The A2A agent of a gateway: answers JSON-RPC calls already known to be well-formed (a2a-endpoint.ts). */
export interface A2AServer {
  handle(request: Record<string, unknown>, legacy: boolean): Promise<RpcOutcome>;
  /** The JSON-RPC error object for something a stream threw, in the 1.0 or the 0.3 shape. */
  rpcError(error: unknown, legacy: boolean): { code: number; message: string; data?: unknown };
  /** How many tasks the store holds (tests, metrics). */
  readonly tasks: SqliteTaskStore;
  close(): void;
}

/** Where the request handler leaves the task input it admitted, for the executor (ServerCallContext.state). */
const ADMITTED = "hermes.taskInput";

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
  const tasks = SqliteTaskStore.open(deps.dir ? join(deps.dir, "data", "a2a-tasks.db") : ":memory:");
  failInterrupted(tasks);
  const executor = new MeshAgentExecutor(deps.node, deps.registry);
  // The card the handler checks capabilities against; the one served is built per request (a2a-card.ts).
  const card = AgentCard.fromJSON(agentCard([], { url: "http://localhost/a2a", meshName: deps.meshName, version: deps.version, bearer: false }));
  // No state keeps a task's bus alive once its request is over: AUTH_REQUIRED ends the stream,
  // and a follow-up message on the task starts a new request.
  const handler = new MeshRequestHandler(card, tasks, executor, deps.registry);
  const v1 = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);
  return {
    tasks,
    async handle(request, isLegacy) {
      const context = new ServerCallContext({ requestedVersion: isLegacy ? "0.3" : "1.0" });
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
  readonly #node: MeshNode;
  readonly #registry: Registry;
  /** The requests running, by task id: cancelTask aborts them. */
  readonly running = new Map<string, AbortController>();

  constructor(node: MeshNode, registry: Registry) {
    this.#node = node;
    this.#registry = registry;
  }

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    const publish = (event: AgentExecutionEvent) => bus.publish(event);
    const update = (state: TaskState, message?: Message, metadata?: Record<string, unknown>) =>
      publish({ kind: "statusUpdate", data: { taskId, contextId, status: status(state, message), metadata } });
    let input: TaskInput;
    try {
      input = (ctx.context.state.get(ADMITTED) as TaskInput | undefined) ?? taskInput(ctx.userMessage, ctx.request.metadata, skillsOf(this.#registry), priorSkill(ctx.task));
    } catch (error) {
      // Admitted by the handler, then the registry changed: the task exists only to say why it failed.
      const coded = HermesError.from(error);
      publish({ kind: "task", data: newTask(taskId, contextId, { error_code: coded.code }) });
      update(TaskState.TASK_STATE_FAILED, agentMessage(taskId, contextId, errorParts(coded), errorMeta(coded)));
      return;
    }
    // The task id is the request's trace id: the dashboard's trace view (/api/trace/<task id>) finds it.
    const { request, timeoutMs } = newRequest(this.#node.address, { capability: input.skill }, input.payload, {
      trace_id: taskId, context_id: contextId, timeoutMs: input.timeoutMs,
    });
    const hermes = { skill: input.skill, message_id: request.message_id, trace_id: taskId, context_id: contextId };
    publish({ kind: "task", data: newTask(taskId, contextId, hermes, ctx.task) });
    const controller = new AbortController();
    this.running.set(taskId, controller);
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
    } catch (error) {
      const coded = HermesError.from(error);
      const meta = { hermes: { ...hermes, error_code: coded.code, error_name: errorName(coded.code) } };
      if (controller.signal.aborted) update(TaskState.TASK_STATE_CANCELED, agentMessage(taskId, contextId, [textPart("canceled: the Hermes request was cancelled")]), meta);
      else update(stateOfError(coded.code), agentMessage(taskId, contextId, errorParts(coded), errorMeta(coded)), meta);
    } finally {
      this.running.delete(taskId);
    }
  }

  /** Aborting the request sends the actor a Hermes cancel; execute() then publishes CANCELED. */
  async cancelTask(taskId: string): Promise<void> {
    this.running.get(taskId)?.abort();
  }
}

/**
 * The SDK's request handler, refusing before any task exists what cannot run: a message naming
 * an unknown skill (or none, among several), or one without a usable part, is a JSON-RPC error
 * (-32602 listing the skills), and a message on a task still running is refused (-32004).
 */
class MeshRequestHandler extends DefaultRequestHandler {
  readonly #tasks: SqliteTaskStore;
  readonly #executor: MeshAgentExecutor;
  readonly #registry: Registry;

  constructor(card: AgentCard, tasks: SqliteTaskStore, executor: MeshAgentExecutor, registry: Registry) {
    super(card, tasks, executor, undefined, undefined, undefined, undefined, undefined, { keepBusAliveStates: [] });
    this.#tasks = tasks;
    this.#executor = executor;
    this.#registry = registry;
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    this.#admit(params, context);
    return super.sendMessage(params, context);
  }

  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    this.#admit(params, context);
    yield* super.sendMessageStream(params, context);
  }

  #admit(params: SendMessageRequest, context: ServerCallContext): void {
    const message = params.message;
    if (!message) return; // The SDK answers that one.
    const prior = message.taskId ? this.#tasks.loadNow(message.taskId) : undefined;
    if (prior && this.#executor.running.has(prior.id)) {
      throw new UnsupportedOperationError(`task ${prior.id} is still running: wait for it (GetTask, SubscribeToTask) or cancel it (CancelTask) before sending it another message`);
    }
    try {
      context.state.set(ADMITTED, taskInput(message, params.metadata, skillsOf(this.#registry), priorSkill(prior)));
    } catch (error) {
      const coded = HermesError.from(error);
      const known = (coded.fields.available_tools ?? coded.fields.known) as string[] | undefined;
      throw new RequestMalformedError({
        message: coded.message,
        metadata: { hermes_error_code: String(coded.code), hermes_error_name: errorName(coded.code), ...(known && { skills: known.join(",") }) },
      });
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
