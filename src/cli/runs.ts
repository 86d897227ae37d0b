import { parseArgs } from "node:util";
import { connectMesh, type MeshClient } from "../actor/connect-mesh.ts";
import type { Payload } from "../../mesh/envelope.ts";
import { HermesError } from "../../mesh/errors.ts";
import type { RunSummary } from "../workflow/workflow-engine.ts";
import { MESH_ACCESS_OPTIONS, resolveMeshAccess, withAuthHint } from "./mesh-access.ts";

const USAGE = `Usage: hermes-mesh runs [run_id] [--dir D] [--status S] [--limit N] [--json] [--token-env NAME]

Lists the workflow runs of a running mesh's orchestrators, newest first, with their status
and how many nodes are done (--status running|succeeded|failed|cancelled to filter). With a
run id: that run's nodes and the history of its transitions.`;

/**
 * The orchestrator instances of a mesh (every actor with the `workflow` capability).
 *
 * @example
 * for (const address of orchestrators(client)) await client.request(address, { op: "runs" });
 */
export function orchestrators(client: MeshClient): string[] {
  return client.registry.withCapability("workflow").map((e) => e.address);
}

/**
 * Asks every orchestrator the same question; answers of those that know nothing (code 2) are dropped.
 *
 * @example
 * const [summary] = await askOrchestrators(client, { op: "status", run_id });
 */
export async function askOrchestrators(client: MeshClient, payload: Payload, timeoutMs = 10_000): Promise<Payload[]> {
  const addresses = orchestrators(client);
  if (addresses.length === 0) throw new Error("no orchestrator in this mesh (an actor with the `workflow` capability, actors/orchestrator.ts)");
  const answers = await Promise.allSettled(addresses.map((address) => client.request(address, payload, { timeoutMs })));
  const failures = answers.filter((a): a is PromiseRejectedResult => a.status === "rejected").map((a) => HermesError.from(a.reason));
  const unexpected = failures.find((e) => e.code !== 2);
  if (unexpected) throw unexpected;
  return answers.flatMap((a) => (a.status === "fulfilled" ? [a.value.payload] : []));
}

/** `hermes-mesh runs`: exit 0 with the list (or the run), 1 when the run is unknown or the mesh unreachable. */
export async function runRunsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { ...MESH_ACCESS_OPTIONS, status: { type: "string" }, limit: { type: "string", default: "50" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const access = resolveMeshAccess(values);
  const client = await withAuthHint(access, () => connectMesh({ dir: access.dir, name: "cli", token: access.token }));
  try {
    if (positionals.length > 0) {
      const [found] = await askOrchestrators(client, { op: "status", run_id: positionals[0] });
      if (!found) {
        console.error(`hermes-mesh runs: no run ${positionals[0]} in this mesh`);
        return 1;
      }
      console.log(values.json ? JSON.stringify(found, null, 2) : formatRun(found as unknown as RunSummary & { transitions: Array<Record<string, unknown>> }));
      return 0;
    }
    const answers = await askOrchestrators(client, { op: "runs", limit: Number(values.limit), ...(values.status && { status: values.status }) });
    const runs = answers.flatMap((a) => a.runs as RunSummary[]).sort((a, b) => b.created_at - a.created_at);
    console.log(values.json ? JSON.stringify(runs, null, 2) : formatRuns(runs));
    return 0;
  } finally {
    await client.close();
  }
}

/**
 * Runs as a table.
 *
 * @example
 * formatRuns(runs); // "RUN ID  WORKFLOW  STATUS  NODES  STARTED  DURATION\n01J...  image-caption v1  succeeded  3/4 ..."
 */
export function formatRuns(runs: RunSummary[]): string {
  if (runs.length === 0) return "no runs";
  const rows = runs.map((r) => {
    const nodes = Object.values(r.nodes);
    const done = nodes.filter((n) => n.status === "succeeded").length;
    return [r.run_id, `${r.workflow} v${r.version}`, r.status, `${done}/${nodes.length}`, new Date(r.created_at).toISOString(), r.duration_ms === null ? "-" : `${(r.duration_ms / 1000).toFixed(2)} s`];
  });
  return table([["RUN ID", "WORKFLOW", "STATUS", "NODES OK", "STARTED", "DURATION"], ...rows]);
}

function formatRun(run: RunSummary & { transitions: Array<Record<string, unknown>> }): string {
  const head = `run ${run.run_id}: ${run.workflow} v${run.version}, ${run.status}${run.duration_ms === null ? "" : ` in ${(run.duration_ms / 1000).toFixed(2)} s`}, trace ${run.trace_id}`;
  const nodes = table([
    ["NODE", "STATUS", "ATTEMPT", "ROUND", "REQUESTS", "ERROR"],
    ...Object.entries(run.nodes).map(([id, n]) => [id, n.status, String(n.attempt), String(n.round), String(n.requests), n.error ? String(n.error.detail ?? "") : ""]),
  ]);
  const start = Number(run.transitions[0]?.at ?? run.created_at);
  const history = run.transitions.map((t) => `  +${((Number(t.at) - start) / 1000).toFixed(3)} s  ${t.node_id ?? "(run)"}  ${t.status}${t.attempt ? ` attempt ${t.attempt}` : ""}${Number(t.round) > 1 ? ` round ${t.round}` : ""}`);
  const extra = run.error ? `\nerror: ${JSON.stringify(run.error)}` : run.output !== undefined ? `\noutput: ${JSON.stringify(run.output)}` : "";
  return `${head}\n${nodes}${extra}\n\ntransitions:\n${history.join("\n")}`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}
