import type { RecordEvent } from "./run-trace.ts";
import type { Workflow } from "./workflow-definition.ts";
import { parseWorkflow } from "./workflow-loader.ts";
import type { RequestSender } from "./run-events.ts";
import { WorkflowRun } from "./workflow-run.ts";
import { NodeStatus, RunStatus, type NodeRecord, type RunRecord, type WorkflowStore } from "./workflow-store.ts";

/** A new run: its id (the orchestrator uses the run request's message_id), definition and input. */
export interface StartRun {
  runId: string;
  workflow: Workflow;
  input: Record<string, unknown>;
  traceId: string;
  contextId: string;
}

/** A run as answers and `hermes-mesh runs` show it. */
export interface RunSummary {
  run_id: string;
  workflow: string;
  version: string;
  status: RunStatus;
  trace_id: string;
  context_id: string;
  created_at: number;
  finished_at: number | null;
  duration_ms: number | null;
  output?: unknown;
  error?: Record<string, unknown>;
  nodes: Record<string, { status: NodeStatus; attempt: number; round: number; requests: number; error?: Record<string, unknown> }>;
}

/**
 * The runs of one orchestrator: starts them, resumes the unfinished ones after a restart,
 * cancels, and describes them from the store.
 *
 * @example
 * const engine = new WorkflowEngine({ store, sender: link, record: ctx.record });
 * engine.resumeAll();
 * const run = engine.start({ runId, workflow, input, traceId, contextId });
 * const finished = await run.done;
 */
export class WorkflowEngine {
  #runs = new Map<string, WorkflowRun>();
  #store: WorkflowStore;
  #sender: RequestSender;
  #record: RecordEvent | undefined;

  constructor(options: { store: WorkflowStore; sender: RequestSender; record?: RecordEvent }) {
    this.#store = options.store;
    this.#sender = options.sender;
    this.#record = options.record;
  }

  /** Stores a new run with every node pending, then starts what is ready. */
  start(options: StartRun): WorkflowRun {
    const now = Date.now();
    const { workflow } = options;
    const run: RunRecord = {
      run_id: options.runId,
      workflow: workflow.name,
      version: workflow.version,
      file: workflow.file,
      source: workflow.source,
      input: options.input,
      status: RunStatus.RUNNING,
      trace_id: options.traceId,
      context_id: options.contextId,
      created_at: now,
      updated_at: now,
      finished_at: null,
      output: null,
      error: null,
    };
    const nodes = workflow.order.map((id): NodeRecord => ({
      node_id: id,
      status: NodeStatus.PENDING,
      attempt: 0,
      round: 1,
      requests: 0,
      message_id: null,
      envelope: null,
      next_at: null,
      started_at: null,
      finished_at: null,
      result: null,
      error: null,
      feedback: null,
    }));
    this.#store.createRun(run, nodes);
    const execution = this.#track(new WorkflowRun(workflow, run, nodes, this.#options()));
    execution.pump();
    return execution;
  }

  /** Picks up every run the store says is still running (after a crash or a restart); returns them. */
  resumeAll(): WorkflowRun[] {
    const resumed: WorkflowRun[] = [];
    for (const run of this.#store.list({ status: RunStatus.RUNNING, limit: 1_000_000 })) {
      if (this.#runs.has(run.run_id)) continue;
      let workflow: Workflow;
      try {
        workflow = parseWorkflow(run.source, run.file);
      } catch (error) {
        // The stored definition no longer loads (it always should): the run cannot go on.
        const now = Date.now();
        this.#store.transition(run.run_id, [], { ...run, status: RunStatus.FAILED, error: { detail: `cannot resume: ${(error as Error).message}` }, updated_at: now, finished_at: now });
        continue;
      }
      const execution = this.#track(new WorkflowRun(workflow, run, this.#store.nodes(run.run_id), this.#options()));
      resumed.push(execution);
    }
    // Registered before any resumes, so a redelivered run request arriving now finds its run.
    for (const execution of resumed) execution.resume();
    return resumed;
  }

  /** The live run with this id (running in this process). */
  active(runId: string): WorkflowRun | undefined {
    return this.#runs.get(runId);
  }

  /** Cancels a running run; undefined when the store has no such run. */
  cancel(runId: string, reason = "cancelled"): RunSummary | undefined {
    this.#runs.get(runId)?.cancel(reason);
    return this.summary(runId);
  }

  /** A run with its nodes, from the store. */
  summary(runId: string): RunSummary | undefined {
    const run = this.#store.run(runId);
    return run ? summarize(run, this.#store.nodes(runId)) : undefined;
  }

  /** Recent runs, newest first. */
  list(options: { status?: RunStatus; limit?: number } = {}): RunSummary[] {
    return this.#store.list(options).map((run) => summarize(run, this.#store.nodes(run.run_id)));
  }

  /** The history of a run's transitions. */
  transitions(runId: string) {
    return this.#store.transitions(runId);
  }

  /** Stops every live run without changing what is stored: they resume at the next start. */
  suspend(): void {
    for (const run of this.#runs.values()) run.suspend();
    this.#runs.clear();
  }

  #track(execution: WorkflowRun): WorkflowRun {
    this.#runs.set(execution.run.run_id, execution);
    void execution.done.then(() => this.#runs.delete(execution.run.run_id));
    return execution;
  }

  #options() {
    return { store: this.#store, sender: this.#sender, ...(this.#record && { record: this.#record }) };
  }
}

/**
 * A run and its nodes as a plain answer.
 *
 * @example
 * summarize(store.run(id)!, store.nodes(id)).nodes.image.status; // "succeeded"
 */
export function summarize(run: RunRecord, nodes: NodeRecord[]): RunSummary {
  return {
    run_id: run.run_id,
    workflow: run.workflow,
    version: run.version,
    status: run.status,
    trace_id: run.trace_id,
    context_id: run.context_id,
    created_at: run.created_at,
    finished_at: run.finished_at,
    duration_ms: run.finished_at === null ? null : run.finished_at - run.created_at,
    ...(run.output !== null && { output: run.output }),
    ...(run.error !== null && { error: run.error }),
    nodes: Object.fromEntries(
      nodes.map((n) => [n.node_id, { status: n.status, attempt: n.attempt, round: n.round, requests: n.requests, ...(n.error && n.status !== NodeStatus.SUCCEEDED && { error: n.error }) }]),
    ),
  };
}
