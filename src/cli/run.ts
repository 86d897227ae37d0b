import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { connectMesh } from "../actor/connect-mesh.ts";
import type { Payload } from "../../mesh/envelope.ts";
import { HermesError } from "../../mesh/errors.ts";
import { loadMeshFile } from "../supervisor/mesh-file.ts";
import { loadWorkflow } from "../workflow/workflow-loader.ts";
import { checkProviders, meshFileProviders, readModuleCapabilities } from "../workflow/workflow-providers.ts";
import { MESH_ACCESS_OPTIONS, resolveMeshAccess, withAuthHint } from "./mesh-access.ts";
import { askOrchestrators, orchestrators } from "./runs.ts";

const USAGE = `Usage: hermes-mesh run <workflow.yaml | name> ['<json input>'] [--dir D] [--timeout ms] [--detach] [--json] [--token-env NAME]
       hermes-mesh run --cancel <run_id> [--dir D]
       hermes-mesh run --validate <workflow.yaml> [--mesh mesh.yaml]

Starts a workflow run on a running mesh's orchestrator and streams its progress node by node
(to stderr); the run's answer is printed as JSON on stdout. A name instead of a file runs
<orchestrator>/workflows/<name>.yaml. Ctrl-C cancels the run; --detach returns at once with
the run id. --cancel cancels a run (the cancel reaches its running nodes). --validate checks
a file offline, and with --mesh also that every capability and target is provided.`;

/** `hermes-mesh run`: exit 0 when the run succeeded, 1 when it failed or was cancelled, 2 on bad arguments or a bad file. */
export async function runRunCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...MESH_ACCESS_OPTIONS,
      timeout: { type: "string", default: "600000" },
      detach: { type: "boolean" },
      json: { type: "boolean" },
      cancel: { type: "string" },
      validate: { type: "string" },
      mesh: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.validate !== undefined) return validate(values.validate, values.mesh);
  if (values.cancel !== undefined) {
    const access = resolveMeshAccess(values);
    const client = await withAuthHint(access, () => connectMesh({ dir: access.dir, name: "cli", token: access.token }));
    try {
      const [summary] = await askOrchestrators(client, { op: "cancel", run_id: values.cancel, reason: "cancelled from the command line" });
      if (!summary) {
        console.error(`hermes-mesh run: no run ${values.cancel} in this mesh`);
        return 1;
      }
      console.log(JSON.stringify(summary));
      return 0;
    } finally {
      await client.close();
    }
  }
  if (positionals.length < 1 || positionals.length > 2) {
    console.error(`hermes-mesh run: expected a workflow file (or name) and a JSON input\n${USAGE}`);
    return 2;
  }
  const [what, text = "{}"] = positionals as [string, string?];
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (error) {
    console.error(`hermes-mesh run: the input is not JSON: ${(error as Error).message}`);
    return 2;
  }
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    console.error("hermes-mesh run: the input must be a JSON object (a map)");
    return 2;
  }
  const isFile = existsSync(what) || /\.ya?ml$/.test(what);
  let request: Payload;
  if (isFile) {
    const file = resolve(what);
    try {
      loadWorkflow(file); // bad files are reported here, with lines, before anything is sent
    } catch (error) {
      console.error((error as Error).message);
      return 2;
    }
    request = { workflow_yaml: readFileSync(file, "utf8"), file, input };
  } else request = { workflow: what, input };
  if (values.detach) request.detach = true;

  const access = resolveMeshAccess(values);
  const client = await withAuthHint(access, () => connectMesh({ dir: access.dir, name: "cli", token: access.token }));
  const started = Date.now();
  let runId: string | undefined;
  let interrupted = false;
  const onSigint = () => {
    // A second Ctrl-C, or one before the run has an id, leaves at once.
    if (!runId || interrupted) process.exit(130);
    interrupted = true;
    process.stderr.write(`\ncancelling run ${runId} ...\n`);
    void askOrchestrators(client, { op: "cancel", run_id: runId, reason: "cancelled from the command line (Ctrl-C)" }).catch(() => {});
  };
  process.on("SIGINT", onSigint);
  try {
    if (orchestrators(client).length === 0) throw new Error("no orchestrator in this mesh (an actor with the `workflow` capability, actors/orchestrator.ts)");
    const reply = await client.request({ capability: "workflow" }, request, {
      timeoutMs: Number(values.timeout),
      onProgress: (p) => {
        if (p.type === "run" && typeof p.run_id === "string") runId = p.run_id;
        process.stderr.write(`${values.json ? JSON.stringify(p) : formatProgress(p, started)}\n`);
      },
    });
    console.log(JSON.stringify(values.json || values.detach ? reply.payload : (reply.payload.output ?? reply.payload), null, values.json ? 0 : 2));
    return 0;
  } catch (error) {
    const e = HermesError.from(error);
    console.error(`error ${e.code} ${e.codeName}: ${e.message}`);
    if (e.fields.nodes) console.error(JSON.stringify(e.fields.nodes));
    return 1;
  } finally {
    process.off("SIGINT", onSigint);
    await client.close();
  }
}

/**
 * One progress message of a run as a line.
 *
 * @example
 * formatProgress({ type: "node", node: "image", status: "running", attempt: 1, round: 1 }, t0); // "  +0.01 s  image  running  attempt 1"
 */
export function formatProgress(p: Payload, started: number): string {
  const at = `+${((Date.now() - started) / 1000).toFixed(2)} s`;
  switch (p.type) {
    case "run":
      if (p.status === "running") return `run ${p.run_id}: ${p.workflow} v${p.version}${p.resumed ? " (resumed)" : ""}, trace ${p.trace_id} (hermes-mesh trace ${p.trace_id})`;
      return `run ${p.run_id} ${p.status}${p.error ? `: ${String((p.error as Payload).detail ?? "")}` : ""}`;
    case "node": {
      const details = [
        p.attempt && Number(p.attempt) > 1 ? `attempt ${p.attempt}` : "",
        Number(p.round) > 1 ? `round ${p.round}` : "",
        p.resent ? "resent after a restart" : "",
        p.retry_in_ms !== undefined ? `retry in ${p.retry_in_ms} ms` : "",
        p.error ? String((p.error as Payload).detail ?? "") : "",
      ].filter(Boolean);
      return `  ${at}  ${String(p.node).padEnd(18)} ${String(p.status).padEnd(10)} ${details.join(", ")}`.trimEnd();
    }
    case "send_back":
      return `  ${at}  ${String(p.node).padEnd(18)} sends back → ${(p.to as string[]).join(", ")} (round ${p.round})`;
    case "node_progress":
      return `  ${at}  ${String(p.node).padEnd(18)} · ${JSON.stringify(p.progress)}`;
    default:
      return `  ${at}  ${JSON.stringify(p)}`;
  }
}

async function validate(file: string, meshPath: string | undefined): Promise<number> {
  try {
    const workflow = loadWorkflow(file);
    if (meshPath) {
      const meshFile = loadMeshFile(meshPath);
      checkProviders(workflow, meshFileProviders(meshFile, meshPath, await readModuleCapabilities(meshFile)));
    }
    console.log(`ok: ${workflow.name} v${workflow.version}, ${workflow.nodes.size} nodes (${workflow.order.join(", ")})${meshPath ? `, all provided by ${meshPath}` : ""}`);
    return 0;
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return 2;
  }
}
