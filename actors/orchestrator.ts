import { join } from "node:path";
import type { ActorContext } from "../src/actor/actor-context.ts";
import { defineActor } from "../src/actor/define-actor.ts";
import type { Envelope, Payload } from "../mesh/envelope.ts";
import { ErrorCode, isErrorCode, HermesError } from "../mesh/errors.ts";
import { parentSpanOf } from "../src/observability/trace-context.ts";
import type { Workflow } from "../src/workflow/workflow-definition.ts";
import { WorkflowEngine, type RunSummary } from "../src/workflow/workflow-engine.ts";
import { WorkflowLink } from "../src/workflow/workflow-link.ts";
import { loadWorkflow, parseWorkflow } from "../src/workflow/workflow-loader.ts";
import { checkProviders } from "../src/workflow/workflow-providers.ts";
import { RunStatus, WorkflowStore } from "../src/workflow/workflow-store.ts";

/** Where `{ workflow: "<name>" }` finds `<name>.yaml`. */
const WORKFLOWS_DIR = process.env.HERMES_WORKFLOWS_DIR ?? join(import.meta.dirname, "workflows");

interface State {
  engine: WorkflowEngine;
  link: WorkflowLink;
  store: WorkflowStore;
}

/**
 * The workflow orchestrator (docs/workflows.md): runs YAML DAGs of requests routed by
 * capability, durable across crashes. Its runs live in `<mesh dir>/data/workflows.<address>.db`;
 * after a restart every unfinished run resumes where it stood (finished nodes are not run again,
 * requests in flight are sent again with their message_id, so receivers deduplicate them).
 *
 * Requests (capability `workflow`):
 * - `{ workflow_yaml, file?, input?, detach? }` or `{ workflow: "<name>", input? }`: a run; the
 *   run id is this request's message_id; progress messages report every node transition; the
 *   answer is the run (status, output, nodes), or an error when the run failed or was cancelled.
 * - `{ op: "cancel", run_id }`, `{ op: "runs", status?, limit? }`, `{ op: "status", run_id }`.
 */
export default defineActor<State>({
  capabilities: ["workflow"],
  concurrency: 512,
  durable: true,
  async init(ctx) {
    const dir = process.env.HERMES_MESH_DIR;
    if (!dir) throw new Error("the orchestrator runs inside a mesh (HERMES_MESH_DIR is not set)");
    const file = ctx.address.replace("#", ".");
    const store = WorkflowStore.open(join(dir, "data", `workflows.${file}.db`));
    const link = await WorkflowLink.open({
      dir,
      address: `${ctx.address}.wf`,
      ...(process.env.HERMES_MESH_TOKEN && { token: process.env.HERMES_MESH_TOKEN }),
      onSent: (env: Envelope, to: readonly string[]) =>
        ctx.record({ event: "sent", type: env.message_type, trace_id: env.trace_id, message_id: env.message_id, parent_span_id: parentSpanOf(env.headers), to, ...(env.capability !== undefined && { capability: env.capability }) }),
    });
    const engine = new WorkflowEngine({ store, sender: link, record: ctx.record });
    const resumed = engine.resumeAll();
    if (resumed.length > 0) ctx.log.info("resumed runs", { runs: resumed.map((r) => r.run.run_id) });
    return { engine, link, store };
  },
  async onRequest(request, ctx) {
    const p = request.payload;
    const { engine } = ctx.state;
    switch (p.op ?? "run") {
      case "run":
        return run(request, ctx);
      case "cancel": {
        const summary = engine.cancel(runIdOf(p), typeof p.reason === "string" ? p.reason : "cancelled by request");
        if (!summary) throw unknownRun(runIdOf(p));
        return summary as unknown as Payload;
      }
      case "status": {
        const summary = engine.summary(runIdOf(p));
        if (!summary) throw unknownRun(runIdOf(p));
        return { ...summary, transitions: engine.transitions(summary.run_id) };
      }
      case "runs": {
        const status = Object.values(RunStatus).find((s) => s === p.status);
        return { runs: engine.list({ ...(status && { status }), limit: typeof p.limit === "number" ? p.limit : 100 }) };
      }
      default:
        throw new HermesError(ErrorCode.INVALID_REQUEST, `unknown op ${JSON.stringify(p.op)}`, { reason: "unknown op", expected: ["run", "cancel", "status", "runs"] });
    }
  },
  async onStop(ctx) {
    // Runs stay "running" in the store: the next start resumes them.
    ctx.state.engine.suspend();
    await ctx.state.link.close();
    ctx.state.store.close();
  },
});

/** Starts a run (or attaches to it when this request is a redelivery), streams its events, answers its outcome. */
async function run(request: Envelope, ctx: ActorContext<State>): Promise<Payload> {
  const { engine, link } = ctx.state;
  const p = request.payload;
  const runId = request.message_id;
  let execution = engine.active(runId);
  const resumed = execution !== undefined;
  if (!execution) {
    const finished = engine.summary(runId);
    if (finished) return outcome(finished); // answered before a crash, asked again
    const workflow = workflowOf(p);
    checkProviders(workflow, link.providers());
    const input = p.input ?? {};
    if (typeof input !== "object" || input === null || Array.isArray(input)) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, "input must be a map", { reason: "input is not a map", expected: { input: "a map" } });
    }
    execution = engine.start({ runId, workflow, input: input as Record<string, unknown>, traceId: request.trace_id, contextId: request.context_id ?? runId });
  }
  const summary = engine.summary(runId)!;
  ctx.progress({ type: "run", run_id: runId, status: summary.status, workflow: summary.workflow, version: summary.version, trace_id: summary.trace_id, resumed, nodes: summary.nodes });
  if (p.detach === true) return { run_id: runId, status: summary.status, trace_id: summary.trace_id, detached: true };
  const unsubscribe = execution.subscribe((event) => ctx.progress(event as unknown as Payload));
  try {
    // The requester giving up (its deadline, a cancel) detaches it; the run goes on.
    await Promise.race([execution.done, new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }))]);
  } finally {
    unsubscribe();
  }
  return outcome(engine.summary(runId)!);
}

function outcome(summary: RunSummary): Payload {
  if (summary.status === RunStatus.SUCCEEDED || summary.status === RunStatus.RUNNING) return summary as unknown as Payload;
  const error = summary.error ?? {};
  const code = summary.status === RunStatus.CANCELLED ? ErrorCode.TASK_TIMEOUT : isErrorCode(error.error_code) ? error.error_code : ErrorCode.INTERNAL;
  const where = typeof error.node === "string" ? ` at node "${error.node}"` : "";
  throw new HermesError(code, `run ${summary.run_id} ${summary.status}${where}: ${String(error.detail ?? summary.status)}`, { ...summary });
}

function workflowOf(p: Payload): Workflow {
  if (typeof p.workflow_yaml === "string") return parseWorkflow(p.workflow_yaml, typeof p.file === "string" ? p.file : "workflow.yaml");
  if (typeof p.workflow === "string" && /^[a-z0-9][a-z0-9_.-]*$/.test(p.workflow)) return loadWorkflow(join(WORKFLOWS_DIR, `${p.workflow}.yaml`));
  throw new HermesError(ErrorCode.INVALID_REQUEST, "a run needs workflow_yaml (the file's text) or workflow (a name in the workflows directory)", {
    reason: "no workflow",
    expected: { workflow_yaml: "YAML text", workflow: "a name matching [a-z0-9][a-z0-9_.-]*", input: "a map" },
  });
}

function runIdOf(p: Payload): string {
  if (typeof p.run_id === "string" && p.run_id.length > 0) return p.run_id;
  throw new HermesError(ErrorCode.INVALID_REQUEST, "run_id is required", { reason: "missing run_id", expected: { run_id: "a run id" } });
}

function unknownRun(runId: string): HermesError {
  return new HermesError(ErrorCode.INVALID_REQUEST, `no run ${runId} in this orchestrator`, { reason: "unknown run", run_id: runId });
}
