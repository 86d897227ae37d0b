import type { Envelope, Payload } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { nodeRequest, resentEnvelope } from "./node-request.ts";
import { RunEvents, type RequestSender, type RunEvent } from "./run-events.ts";
import { nodePayload, nodeScope, runOutput, settledOf } from "./run-scope.ts";
import { recordNodeSpan, type RecordEvent } from "./run-trace.ts";
import { sendBackPlan } from "./send-back.ts";
import type { Workflow, WorkflowNode } from "./workflow-definition.ts";
import { backoffMs } from "./workflow-schema.ts";
import { NodeStatus, RunStatus, type NodeRecord, type RunRecord, type WorkflowStore } from "./workflow-store.ts";
import { evaluateCondition } from "./when-condition.ts";

const TERMINAL: ReadonlySet<string> = new Set([NodeStatus.SUCCEEDED, NodeStatus.FAILED, NodeStatus.SKIPPED, NodeStatus.CANCELLED]);

/**
 * One run's state machine. Node transitions:
 *
 *   pending ──when false / all upstream skipped──▶ skipped
 *   pending ──inputs ready──▶ running ──answer──▶ succeeded ──send_back──▶ pending (round + 1)
 *                              │  ▲
 *                        error │  │ backoff elapsed
 *                              ▼  │
 *                           retry_wait          running ──retries exhausted──▶ failed
 *   running / retry_wait ──cancel or run failure──▶ cancelled
 *
 * A failed node's `on_failure` node then runs in its place; a failure nothing stands in for
 * fails the run (its other running nodes are cancelled, the flow's `on_failure` runs). Every
 * transition is committed to the store before anything acts on it; a node's request envelope
 * is stored before it is sent, so `resume()` sends the very same envelope again.
 *
 * @example
 * const run = new WorkflowRun(workflow, record, nodes, { store, sender: link });
 * run.pump(); // starts what is ready
 * await run.done;
 */
export class WorkflowRun {
  readonly workflow: Workflow;
  run: RunRecord;
  readonly nodes: Map<string, NodeRecord>;
  readonly done: Promise<RunRecord>;
  #store: WorkflowStore;
  #sender: RequestSender;
  #record: RecordEvent | undefined;
  #events = new RunEvents();
  #controllers = new Map<string, AbortController>();
  #timers = new Map<string, ReturnType<typeof setTimeout>>();
  #resolve!: (run: RunRecord) => void;
  #pumping = false;
  #again = false;
  #suspended = false;

  constructor(workflow: Workflow, run: RunRecord, nodes: NodeRecord[], options: { store: WorkflowStore; sender: RequestSender; record?: RecordEvent }) {
    this.workflow = workflow;
    this.run = run;
    this.nodes = new Map(nodes.map((n) => [n.node_id, n]));
    this.#store = options.store;
    this.#sender = options.sender;
    this.#record = options.record;
    this.done = new Promise((resolve) => (this.#resolve = resolve));
    if (run.status !== RunStatus.RUNNING) this.#resolve(run);
  }

  /** Listens to this run's events; returns the unsubscribe. */
  subscribe(listener: (event: RunEvent) => void): () => void {
    return this.#events.subscribe(listener);
  }

  /** Picks up after a restart: requests in flight go out again unchanged, retries wait what is left. */
  resume(): void {
    for (const record of this.nodes.values()) {
      if (record.status === NodeStatus.RUNNING && record.envelope) {
        const envelope = resentEnvelope(record.envelope, this.#node(record.node_id).ttlMs);
        this.#store.note(this.run.run_id, record.node_id, "resent", record.message_id);
        this.#emit({ type: "node", run_id: this.run.run_id, node: record.node_id, status: record.status, attempt: record.attempt, round: record.round, resent: true });
        this.#send(record.node_id, envelope);
      } else if (record.status === NodeStatus.RETRY_WAIT) {
        this.#scheduleRetry(record.node_id, Math.max(0, (record.next_at ?? 0) - Date.now()));
      }
    }
    this.pump();
  }

  /** Starts every node whose inputs are ready and settles the run when it can. Re-entrant calls fold into one. */
  pump(): void {
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    try {
      do {
        this.#again = false;
        this.#step();
      } while (this.#again);
    } finally {
      this.#pumping = false;
    }
  }

  /** Cancels the run: in-flight requests are aborted (the mesh sends cancel envelopes to their handlers). */
  cancel(reason = "cancelled"): RunRecord {
    if (this.run.status !== RunStatus.RUNNING) return this.run;
    this.#finish(RunStatus.CANCELLED, { error_code: ErrorCode.TASK_TIMEOUT, detail: reason });
    return this.run;
  }

  /** Stops acting without touching the stored state (the process is stopping; the run resumes at the next start). */
  suspend(): void {
    this.#suspended = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  #step(): void {
    if (this.run.status !== RunStatus.RUNNING || this.#suspended) return;
    const failing = this.run.error !== null;
    const flowFallback = this.workflow.onFailure;
    if (failing && flowFallback && this.nodes.get(flowFallback)!.status === NodeStatus.PENDING) this.#begin(this.#node(flowFallback));
    for (const id of this.workflow.order) {
      if (failing) break;
      const node = this.#node(id);
      const record = this.nodes.get(id)!;
      // A failed node's stand-in starts here (also after a crash between the two transitions).
      if (record.status === NodeStatus.FAILED && node.onFailure && this.nodes.get(node.onFailure)!.status === NodeStatus.PENDING) this.#begin(this.#node(node.onFailure));
      if (record.status !== NodeStatus.PENDING || node.handles) continue;
      const upstream = this.workflow.graph.upstream(id).map((up) => settledOf(this.workflow, this.nodes, up));
      if (upstream.includes("waiting") || upstream.includes("failed")) continue;
      if (upstream.length > 0 && upstream.every((s) => s === "skipped")) this.#skip(node, "every upstream node was skipped");
      else this.#begin(node);
    }
    const busy = [...this.nodes.values()].some((n) => n.status === NodeStatus.RUNNING || n.status === NodeStatus.RETRY_WAIT);
    if (busy) return;
    if (failing) {
      this.#finish(RunStatus.FAILED, this.run.error!);
      return;
    }
    const regular = [...this.workflow.nodes.values()].filter((n) => !n.handles);
    const settled = regular.map((n) => settledOf(this.workflow, this.nodes, n.id));
    if (settled.every((s) => s === "ok" || s === "skipped")) {
      this.#finish(RunStatus.SUCCEEDED, null);
      return;
    }
    // Nothing runs and a failure stands: its stand-in was skipped, or a crash came between the
    // node's failure and the run's. The run fails now rather than waiting for nothing.
    const failed = regular.find((_, i) => settled[i] === "failed");
    if (failed) this.#failRun({ ...(this.nodes.get(failed.id)!.error ?? { detail: "failed" }), node: failed.id });
  }

  /** Starts a ready node, or skips it when its `when` is false. */
  #begin(node: WorkflowNode): void {
    if (node.when && !evaluateCondition(node.when, nodeScope(this.workflow, this.run, this.nodes, node))) this.#skip(node, `when ${JSON.stringify(node.when.source)} is false`);
    else this.#start(node);
  }

  #start(node: WorkflowNode): void {
    const record = this.nodes.get(node.id)!;
    const payload = nodePayload(this.workflow, this.run, this.nodes, node);
    if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
      this.#failed(node, { ...record, attempt: record.attempt + 1 }, new HermesError(ErrorCode.INVALID_REQUEST, `node "${node.id}": its input mapping gave ${Array.isArray(payload) ? "a list" : typeof payload}, not a map`));
      return;
    }
    const envelope = nodeRequest(this.#sender.address, this.run, node, record.round, payload as Payload);
    let unroutable: HermesError | undefined;
    try {
      this.#sender.pin(envelope);
    } catch (error) {
      unroutable = HermesError.from(error);
    }
    const next: NodeRecord = {
      ...record,
      status: NodeStatus.RUNNING,
      attempt: record.attempt + 1,
      requests: record.requests + 1,
      message_id: envelope.message_id,
      envelope: { ...envelope },
      next_at: null,
      started_at: record.attempt === 0 ? Date.now() : record.started_at,
      finished_at: null,
    };
    this.#commit([next]); // stored before it is sent: a crash after this resends the same envelope
    if (unroutable) this.#attemptFailed(node, unroutable);
    else this.#send(node.id, envelope);
  }

  #send(id: string, envelope: Envelope): void {
    const node = this.#node(id);
    const controller = new AbortController();
    this.#controllers.set(id, controller);
    const current = () => this.run.status === RunStatus.RUNNING && !this.#suspended && this.nodes.get(id)!.message_id === envelope.message_id && this.nodes.get(id)!.status === NodeStatus.RUNNING;
    this.#sender
      .request(envelope, {
        timeoutMs: node.timeoutMs,
        signal: controller.signal,
        onProgress: (progress) => this.#emit({ type: "node_progress", run_id: this.run.run_id, node: id, progress }),
      })
      .then(
        (answer) => current() && this.#answered(node, answer.payload),
        (error) => current() && this.#attemptFailed(node, HermesError.from(error)),
      )
      .finally(() => {
        if (this.#controllers.get(id) === controller) this.#controllers.delete(id);
        this.pump();
      });
  }

  #answered(node: WorkflowNode, result: Payload): void {
    const record = this.nodes.get(node.id)!;
    const done: NodeRecord = { ...record, status: NodeStatus.SUCCEEDED, result, error: null, finished_at: Date.now() };
    const sendBack = node.sendBack;
    if (sendBack && evaluateCondition(sendBack.when, { ...nodeScope(this.workflow, this.run, this.nodes, node), result })) {
      if (record.round >= sendBack.maxRounds) {
        this.#failed(node, done, new HermesError(ErrorCode.INVALID_REQUEST, `node "${node.id}" still sends the work back after ${record.round} round(s)`, { result, max_rounds: sendBack.maxRounds }));
        return;
      }
      this.#sendBack(node, done, result);
      return;
    }
    this.#commit([done]);
    recordNodeSpan(this.#record, this.run, node, done);
  }

  /** The work goes back: the chosen upstream nodes, whatever lies between them and this node, and this node run again. */
  #sendBack(node: WorkflowNode, done: NodeRecord, result: Payload): void {
    const { targets, reset } = sendBackPlan(this.workflow, node, result);
    recordNodeSpan(this.#record, this.run, node, done);
    this.#emit({ type: "send_back", run_id: this.run.run_id, node: node.id, to: targets, round: done.round + 1 });
    const rows = reset.map((id) => {
      const r = id === node.id ? done : this.nodes.get(id)!;
      return { ...r, status: NodeStatus.PENDING, attempt: 0, round: r.round + 1, message_id: null, envelope: null, next_at: null, result: null, error: null, finished_at: null, feedback: targets.includes(id) ? result : r.feedback };
    });
    this.#commit(rows);
  }

  #attemptFailed(node: WorkflowNode, error: HermesError): void {
    const record = this.nodes.get(node.id)!;
    if (record.attempt <= node.retry.max) {
      const wait = backoffMs(node.retry, record.attempt);
      this.#commit([{ ...record, status: NodeStatus.RETRY_WAIT, next_at: Date.now() + wait, error: error.toPayload() }], { retry_in_ms: wait });
      this.#scheduleRetry(node.id, wait);
      return;
    }
    this.#failed(node, record, error);
  }

  #scheduleRetry(id: string, wait: number): void {
    this.#timers.set(id, setTimeout(() => {
      this.#timers.delete(id);
      if (this.run.status === RunStatus.RUNNING && !this.#suspended && this.nodes.get(id)!.status === NodeStatus.RETRY_WAIT) this.#start(this.#node(id));
      this.pump();
    }, wait));
  }

  /** A node failed for good: its on_failure node stands in, else the run fails. */
  #failed(node: WorkflowNode, record: NodeRecord, error: HermesError): void {
    const failed: NodeRecord = { ...record, status: NodeStatus.FAILED, error: error.toPayload(), next_at: null, finished_at: Date.now() };
    this.#commit([failed]);
    recordNodeSpan(this.#record, this.run, node, failed);
    // A stand-in still pending is started by the next step; without one the run fails.
    if (node.onFailure && this.nodes.get(node.onFailure)!.status === NodeStatus.PENDING && this.run.error === null) return;
    this.#failRun({ ...error.toPayload(), node: node.id });
  }

  /** The run fails: what still runs is cancelled; the next step starts the flow's on_failure node if there is one. */
  #failRun(error: Record<string, unknown>): void {
    // The first failure is the run's error; a failing flow on_failure node only adds to it.
    const first = this.run.error;
    this.run = { ...this.run, error: first ? { ...first, on_failure_error: error } : error, updated_at: Date.now() };
    const stopped = first ? [] : this.#stopAll(NodeStatus.CANCELLED);
    this.#commit(stopped, undefined, true);
  }

  /** Aborts every request in flight and every retry waiting; returns their new rows. */
  #stopAll(status: NodeStatus): NodeRecord[] {
    const rows: NodeRecord[] = [];
    for (const record of this.nodes.values()) {
      if (record.status !== NodeStatus.RUNNING && record.status !== NodeStatus.RETRY_WAIT) continue;
      const row = { ...record, status, next_at: null, finished_at: Date.now() };
      this.nodes.set(record.node_id, row);
      rows.push(row);
      recordNodeSpan(this.#record, this.run, this.#node(record.node_id), row);
    }
    for (const [id, timer] of this.#timers) {
      clearTimeout(timer);
      this.#timers.delete(id);
    }
    // After the rows changed: the aborted requests' answers find them no longer running.
    for (const controller of this.#controllers.values()) controller.abort();
    this.#controllers.clear();
    return rows;
  }

  #finish(status: RunStatus, error: Record<string, unknown> | null): void {
    const rows = status === RunStatus.CANCELLED ? this.#stopAll(NodeStatus.CANCELLED) : [];
    for (const record of this.nodes.values()) {
      if (!TERMINAL.has(record.status)) {
        const row = { ...record, status: NodeStatus.SKIPPED, next_at: null };
        this.nodes.set(record.node_id, row);
        rows.push(row);
      }
    }
    const now = Date.now();
    this.run = { ...this.run, status, error, updated_at: now, finished_at: now, output: status === RunStatus.SUCCEEDED ? runOutput(this.workflow, this.run, this.nodes) : null };
    this.#commit(rows, undefined, true);
    this.#resolve(this.run);
  }

  #skip(node: WorkflowNode, reason: string): void {
    this.#commit([{ ...this.nodes.get(node.id)!, status: NodeStatus.SKIPPED, error: { detail: reason }, finished_at: Date.now() }]);
  }

  /** One transition: stored, applied, announced. */
  #commit(rows: NodeRecord[], extra: { retry_in_ms?: number } = {}, runChanged = false): void {
    this.#store.transition(this.run.run_id, rows, runChanged ? this.run : undefined);
    for (const row of rows) {
      this.nodes.set(row.node_id, row);
      this.#emit({
        type: "node",
        run_id: this.run.run_id,
        node: row.node_id,
        status: row.status,
        attempt: row.attempt,
        round: row.round,
        ...(row.error && row.status !== NodeStatus.SUCCEEDED && { error: row.error }),
        ...extra,
      });
    }
    if (runChanged) this.#emit({ type: "run", run_id: this.run.run_id, status: this.run.status, workflow: this.run.workflow, trace_id: this.run.trace_id, ...(this.run.error && { error: this.run.error }) });
    if (rows.length > 0 || runChanged) this.#again = true;
  }

  #emit(event: RunEvent): void {
    this.#events.emit(event);
  }

  #node(id: string): WorkflowNode {
    return this.workflow.nodes.get(id)!;
  }
}
