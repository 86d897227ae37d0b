import { parseArgs } from "node:util";
import { createLogger } from "../actor/logger.ts";
import { loadMeshFile } from "../supervisor/mesh-file.ts";
import { startMesh } from "../supervisor/mesh-runtime.ts";
import type { SupervisorEvent } from "../supervisor/supervisor-events.ts";

const USAGE = `Usage: hermes-mesh up <mesh.yaml> [--dir D] [--quiet]

Starts the supervisor tree of the mesh file in the foreground: every actor instance its own
process, listening on <dir>/<name>.sock. Ctrl-C or SIGTERM stops it cleanly (actors in reverse
start order, sockets removed). Actor log lines are printed as they come unless --quiet.`;

/** `hermes-mesh up`: runs a mesh until Ctrl-C / SIGTERM, or until its root supervisor gives up (exit 1). */
export async function runUpCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { dir: { type: "string" }, quiet: { type: "boolean" }, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    console.error(`hermes-mesh up: expected one mesh file\n${USAGE}`);
    return 2;
  }
  let meshFile;
  try {
    meshFile = loadMeshFile(positionals[0]!);
  } catch (error) {
    console.error(`hermes-mesh up: ${(error as Error).message}`);
    return 2;
  }
  const log = createLogger({ component: "supervisor" });
  const started = Date.now();
  const mesh = await startMesh(meshFile, {
    ...(values.dir !== undefined && { dir: values.dir }),
    log,
    onEvent: (event) => describe(event),
    onOutput: values.quiet ? undefined : (address, line) => console.error(`[${address}] ${line}`),
  });
  console.log(`mesh '${mesh.name}' up in ${Date.now() - started} ms; sockets in ${mesh.dir}`);
  for (const entry of mesh.registry.snapshot()) {
    console.log(`  ${entry.address.padEnd(20)} pid ${String(entry.pid ?? "-").padEnd(8)} ${entry.socket}`);
  }
  console.log(`control: ${mesh.dir}/supervisor.sock   (hermes-mesh ps --dir ${mesh.dir})`);
  const signal = Promise.withResolvers<string>();
  process.on("SIGINT", () => signal.resolve("SIGINT"));
  process.on("SIGTERM", () => signal.resolve("SIGTERM"));
  const outcome = await Promise.race([signal.promise.then((s) => `signal ${s}`), mesh.ended.then((reason) => `supervisor ended: ${reason}`)]);
  console.log(`stopping (${outcome})...`);
  await mesh.stop();
  console.log("stopped: every actor exited, sockets removed");
  return outcome.startsWith("signal") || outcome.endsWith("shutdown") ? 0 : 1;
}

function describe(event: SupervisorEvent): void {
  switch (event.type) {
    case "exited":
      console.error(`${event.child} exited (${event.exit.signal ?? `code ${event.exit.code}`})${event.willRestart ? ", restarting" : ""}`);
      break;
    case "restarted":
      console.error(`${event.children.join(", ")} restarted (${event.supervisor})`);
      break;
    case "intensity_exceeded":
      console.error(`supervisor ${event.supervisor}: more than ${event.intensity} restarts in ${event.period} ms: giving up`);
      break;
  }
}
