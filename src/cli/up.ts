import { parseArgs } from "node:util";
import { createLogger } from "../../mesh/logger.ts";
import { loadMeshFile } from "../supervisor/mesh-file.ts";
import { startMesh } from "../supervisor/mesh-runtime.ts";
import type { SupervisorEvent } from "../supervisor/supervisor-events.ts";

const USAGE = `Usage: hermes-mesh up <mesh.yaml> [--dir D] [--port P] [--host H] [--nats URL[,URL…]] [--no-gateway] [--quiet]

Starts the supervisor tree of the mesh file in the foreground: every actor instance its own
process, listening on <dir>/<name>.sock, and the HTTP gateway on --host:--port (default
127.0.0.1:8000, or the mesh file's gateway section; --port 0 picks a free port) and on
<dir>/gateway.sock. Ctrl-C, SIGTERM or SIGHUP stops it cleanly (actors in reverse start order,
sockets removed), and so does the end of the process that started it (npm, a shell, the
launcher): no actor outlives it. Actor log lines are printed as they come unless --quiet. The
gateway's bearer token, if any, comes from $HERMES_GATEWAY_TOKEN (or the mesh file's
gateway.token_env). --nats runs the mesh over NATS JetStream at those servers (overriding the
mesh file's mesh.transport and mesh.nats.servers): one mesh across every host whose supervisor
uses the same mesh name and servers (docs/nats.md).`;

/** `hermes-mesh up`: runs a mesh until Ctrl-C / SIGTERM, or until its root supervisor gives up (exit 1). */
export async function runUpCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      dir: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      nats: { type: "string" },
      "no-gateway": { type: "boolean" },
      quiet: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
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
  if (values.nats !== undefined) {
    const servers = values.nats.split(",").map((url) => url.trim()).filter(Boolean);
    const bad = servers.find((url) => !/^(nats|tls|wss?):\/\/.+$/.test(url));
    if (servers.length === 0 || bad !== undefined) {
      console.error(`hermes-mesh up: --nats expects server URLs such as nats://127.0.0.1:4222, got '${bad ?? values.nats}'`);
      return 2;
    }
    meshFile.mesh.transport = "nats";
    meshFile.mesh.nats = { replicas: 1, ...meshFile.mesh.nats, servers };
  }
  const log = createLogger({ component: "supervisor" });
  const started = Date.now();
  const port = values.port === undefined ? (meshFile.gateway?.port ?? 8000) : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    console.error(`hermes-mesh up: --port must be a port number from 0 to 65535, got '${values.port}'`);
    return 2;
  }
  const gatewayToken = process.env.HERMES_GATEWAY_TOKEN || (meshFile.gateway?.token_env ? process.env[meshFile.gateway.token_env] : undefined);
  const gatewayLines: string[] = [];
  // The last lines of each child, so that a start that fails under --quiet still shows why.
  const recentOutput = new Map<string, string[]>();
  let mesh;
  try {
    mesh = await startMesh(meshFile, {
    ...(values.dir !== undefined && { dir: values.dir }),
    gateway: values["no-gateway"]
      ? false
      : {
          port,
          host: values.host ?? meshFile.gateway?.host ?? "127.0.0.1",
          ...(meshFile.gateway && { bodyLimitBytes: meshFile.gateway.body_limit_bytes }),
          ...(gatewayToken && { token: gatewayToken }),
        },
    log,
    onEvent: (event) => describe(event),
    onOutput: (address, line) => {
      if (address === "gateway") gatewayLines.push(line);
      const recent = recentOutput.get(address) ?? recentOutput.set(address, []).get(address)!;
      if (recent.push(line) > 30) recent.shift();
      if (!values.quiet) console.error(`[${address}] ${line}`);
    },
  });
  } catch (error) {
    console.error(`hermes-mesh up: the mesh did not start: ${(error as Error).message}`);
    if (gatewayLines.some((l) => l.includes("EADDRINUSE") || l.includes("in use"))) {
      console.error(`hermes-mesh up: port ${port} is taken: pass --port <another> (or --port 0 for any free port)`);
    } else if (values.quiet) {
      const failed = /child '([^']+)'/.exec((error as Error).message)?.[1];
      for (const [address, lines] of recentOutput) {
        if (failed === undefined || address === failed || address === "gateway") for (const line of lines) console.error(`[${address}] ${line}`);
      }
    }
    return 1;
  }
  console.log(`mesh '${mesh.name}' up in ${Date.now() - started} ms; sockets in ${mesh.dir}`);
  for (const entry of mesh.registry.snapshot().filter((e) => e.kind !== "client")) {
    console.log(`  ${entry.address.padEnd(20)} pid ${String(entry.pid ?? "-").padEnd(8)} ${entry.socket}`);
  }
  console.log(`control: ${mesh.dir}/supervisor.sock   (npx hermes-mesh ps --dir ${mesh.dir})`);
  if (mesh.gateway) {
    const auth = gatewayToken ? ` -H 'Authorization: Bearer $HERMES_GATEWAY_TOKEN'` : "";
    console.log(`gateway: ${mesh.gateway.url}  and  ${mesh.gateway.socket}`);
    console.log(`dashboard: ${mesh.gateway.url}/${gatewayToken ? "?token=<your token>" : ""}`);
    // A trace id of this run's own: a socket folder keeps its event logs between runs, and `trace` would list every run's spans under one fixed id.
    const traceId = `t${Date.now().toString(36).slice(-4)}${Math.random().toString(36).slice(2, 6).padEnd(4, "0")}`;
    console.log(`try: curl -X POST ${mesh.gateway.url}/hermes/v1/invoke -H 'Content-Type: application/hermes+json'${auth} -d '{"meta":{"version":"1.2","msg_type":1,"sender_id":"a1b2c3","receiver_id":"d4e5f6","ttl":300,"trace_id":"${traceId}"},"payload":{"task_id":"x1y2z3","tool":"calculator","expression":"2+2"}}'`);
    console.log(`then: npx hermes-mesh trace ${traceId} --dir ${mesh.dir}`);
  }
  const signal = Promise.withResolvers<string>();
  for (const name of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(name, () => signal.resolve(`signal ${name}`));
  const parent = watchParent();
  const outcome = await Promise.race([signal.promise, parent.gone, mesh.ended.then((reason) => `supervisor ended: ${reason}`)]);
  parent.stop();
  console.log(`stopping (${outcome})...`);
  await mesh.stop();
  console.log("stopped: every actor exited, sockets removed");
  return outcome.startsWith("signal") || outcome.startsWith("parent") || outcome.endsWith("shutdown") ? 0 : 1;
}

/**
 * Resolves when the process that started `up` is gone (its parent pid changes). Why: a launcher
 * such as npm, a shell or the `hermes-mesh` Node entry may die without passing a signal on
 * (SIGTERM to `npm start`, kill -9 of the launcher); the mesh must not outlive it as orphans
 * holding the gateway's port. Not armed when started directly by init (pid 1), e.g. as a
 * container's main process, where the parent never changes.
 */
function watchParent(intervalMs = 250): { gone: Promise<string>; stop(): void } {
  const first = process.ppid;
  const gone = Promise.withResolvers<string>();
  if (first <= 1) return { gone: gone.promise, stop() {} };
  const timer = setInterval(() => {
    if (process.ppid !== first) gone.resolve(`parent ${first} gone`);
  }, intervalMs);
  timer.unref();
  return { gone: gone.promise, stop: () => clearInterval(timer) };
}

function describe(event: SupervisorEvent): void {
  switch (event.type) {
    case "exited":
      console.error(`${event.child} exited (${event.exit.signal ?? `code ${event.exit.code}`})${event.willRestart ? ", restarting" : ""}`);
      break;
    case "restarted":
      console.error(`${event.children.join(", ")} restarted (${event.supervisor})`);
      break;
    case "restart_abandoned":
      // A newer restart or the stop says the rest; a failed start is news.
      if (event.reason === "start_failed") console.error(`${event.child} failed to start; restarting again (${event.supervisor})`);
      break;
    case "intensity_exceeded":
      console.error(`supervisor ${event.supervisor}: more than ${event.intensity} restarts in ${event.period} ms: giving up`);
      break;
  }
}
