#!/usr/bin/env bun
/**
 * The entry of an actor process, started by the supervisor:
 * `bun src/actor/host-main.ts --module M --name N --instance I --pool P --dir D [--concurrency C] [--window W] [--shutdown-ms S]`.
 * The mesh token, when the mesh has one, comes in HERMES_MESH_TOKEN (not argv: ps shows argv);
 * HERMES_ACTOR_DURABLE=1 turns on durable mode.
 *
 * `bun src/actor/host-main.ts --standby [--dir D] [preload...]` is a standby host
 * (src/supervisor/standby-host.ts): it loads all of the above and the preload modules, opens its
 * control connection to the mesh in D ahead (mesh/control-client.ts, predialControl) and waits
 * for one line on stdin, a StandbyAssignment with those arguments and the environment's changes,
 * and runs as if started with them. One still waiting after REHEARSE_AFTER_MS loads node:crypto
 * and runs the start's code through once meanwhile (src/actor/rehearsal.ts). It exits when
 * stdin ends first (the supervisor went away).
 */
import { runActorHost, STANDBY_FLAG, type StandbyAssignment } from "./actor-host.ts";
import { formatBuildErrors } from "./build-errors.ts";
import { predialControl } from "../../mesh/control-client.ts";
import { rehearse } from "./rehearsal.ts";

/** How long a standby waits for its assignment before it rehearses: a tree's next child comes sooner. */
const REHEARSE_AFTER_MS = 250;

const OPTIONS = ["module", "name", "instance", "pool", "dir", "concurrency", "window", "shutdown-ms"] as const;
type Option = (typeof OPTIONS)[number];

/**
 * `--key value` pairs of the options above; anything else is refused. Not node:util's
 * parseArgs: loading node:util costs about 1 ms of every actor start, and the supervisor
 * writes these command lines itself.
 */
function parseOptions(argv: readonly string[]): Partial<Record<Option, string>> {
  const values: Partial<Record<Option, string>> = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]!.replace(/^--/, "") as Option;
    if (!argv[i]!.startsWith("--") || !OPTIONS.includes(key) || argv[i + 1] === undefined) {
      console.error(`actor host: unexpected argument '${argv[i]}' (options: ${OPTIONS.map((o) => `--${o} <value>`).join(" ")})`);
      process.exit(2);
    }
    values[key] = argv[i + 1];
  }
  return values;
}

async function main(argv: readonly string[], assignedAt?: number): Promise<void> {
  const values = parseOptions(argv);
  if (!values.module || !values.name || !values.dir) {
    console.error("actor host: --module, --name and --dir are required");
    process.exit(2);
  }
  const optionalNumber = (text: string | undefined) => (text === undefined ? undefined : Number(text));
  try {
    await runActorHost({
      module: values.module,
      name: values.name,
      instance: Number(values.instance ?? 0),
      pool: Number(values.pool ?? 1),
      dir: values.dir,
      concurrency: optionalNumber(values.concurrency),
      window: optionalNumber(values.window),
      shutdownMs: optionalNumber(values["shutdown-ms"]),
      token: process.env.HERMES_MESH_TOKEN || undefined,
      durable: process.env.HERMES_ACTOR_DURABLE === "1",
      events: process.env.HERMES_EVENTS !== "0",
      ...(assignedAt !== undefined && { assignedAt }),
    });
  } catch (error) {
    const line = (fields: Record<string, unknown>) => JSON.stringify({ ts: new Date().toISOString(), level: "error", actor: values.name, ...fields });
    const buildErrors = formatBuildErrors(error);
    if (buildErrors === undefined) {
      console.error(line({ msg: "actor failed to start", error: String(error) }));
    } else {
      // Compiler-style lines, each error once with its file:line:column and source line: a
      // JSON string would fold them into one line of escaped newlines.
      console.error(`${line({ msg: "actor module failed to load", module: values.module })}\n${buildErrors}`);
    }
    process.exit(1);
  }
}

/**
 * Waits for the assignment, takes on its environment and arguments, and runs as them.
 * `args`: `--dir D` (the mesh, whose control socket it dials ahead), then modules to import
 * while waiting, such as the one every actor module imports.
 */
async function standby(args: readonly string[]): Promise<void> {
  const dir = args[0] === "--dir" ? args[1] : undefined;
  const preload = dir === undefined ? args : args.slice(2);
  // As an actor does: a Ctrl-C reaches the whole process group, and the supervisor stops the mesh.
  process.on("SIGINT", () => {});
  // The preloads, which the start would import anyway, also warm the loader for TypeScript sources.
  for (const module of preload) await import(module).catch(() => {});
  let assigned = false;
  // An unreadable stdin is as good as an ended one: there is no assignment to wait for.
  const assignment = firstLine(Bun.stdin.stream()).catch(() => undefined).finally(() => (assigned = true));
  // The dial and hello of a start, done now: the assigned actor registers over this connection.
  if (dir !== undefined) void predialControl(dir, process.env.HERMES_MESH_TOKEN || undefined);
  // A spare that waits (one kept for restarts) has time for what the start would otherwise do
  // then: node:crypto (trace ids of the first request), which the bundle defers
  // (src/supervisor/actor-host-bundle.ts), and the start's path run through once, so that the
  // assigned start is not its code's first run (cut short when the assignment comes). One handed
  // its start at once (the next child as a tree starts) does neither: on two cores that CPU is
  // what the starts before it need.
  if (!(await assignedWithin(assignment, REHEARSE_AFTER_MS))) {
    await import("node:crypto");
    if (!assigned) await rehearse(() => assigned);
  }
  const line = await assignment;
  if (line === undefined) process.exit(0);
  const assignedAt = performance.now();
  const { argv, env } = JSON.parse(line) as StandbyAssignment;
  for (const [name, value] of Object.entries(env)) {
    if (value === null) delete process.env[name];
    else process.env[name] = value;
  }
  process.argv.splice(2, Infinity, ...argv);
  await main(argv, assignedAt);
}

/** Whether `assignment` settles within `ms`. */
async function assignedWithin(assignment: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([assignment.then(() => true), waited]);
  } finally {
    clearTimeout(timer);
  }
}

/** The first line of `stream` (without its newline), or undefined if it ends before one. */
async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string | undefined> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return undefined;
    text += decoder.decode(value, { stream: true });
    const end = text.indexOf("\n");
    if (end >= 0) {
      reader.releaseLock();
      return text.slice(0, end);
    }
  }
}

// Not top-level await: this entry is also bundled as CommonJS with bytecode (actor-host-bundle.ts).
void (process.argv[2] === STANDBY_FLAG ? standby(process.argv.slice(3)) : main(process.argv.slice(2)));
