import { parseArgs } from "node:util";
import { readTrace, renderTrace } from "../observability/trace-tree.ts";
import { resolveMeshDir } from "./mesh-access.ts";

const USAGE = `Usage: hermes-mesh trace <trace_id> [--dir D] [--json]

Rebuilds one flow across actors from the mesh's event logs (<dir>/logs/*.jsonl) as a tree:
each handled message under the handler that sent it, with its start offset, duration and outcome.`;

/** `hermes-mesh trace`: exit 0 with the tree, 1 when the trace has no spans. */
export async function runTraceCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { dir: { type: "string" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" } } });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    console.error(`hermes-mesh trace: expected one trace id\n${USAGE}`);
    return 2;
  }
  const traceId = positionals[0]!;
  const roots = readTrace(resolveMeshDir(values.dir), traceId);
  if (values.json) console.log(JSON.stringify(roots, null, 2));
  else console.log(renderTrace(traceId, roots));
  return roots.length > 0 ? 0 : 1;
}
