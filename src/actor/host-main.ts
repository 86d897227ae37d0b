#!/usr/bin/env bun
/**
 * The entry of an actor process, started by the supervisor:
 * `bun src/actor/host-main.ts --module M --name N --instance I --pool P --dir D [--concurrency C] [--window W] [--shutdown-ms S]`.
 * The mesh token, when the mesh has one, comes in HERMES_MESH_TOKEN (not argv: ps shows argv);
 * HERMES_ACTOR_DURABLE=1 turns on durable mode.
 */
import { parseArgs } from "node:util";
import { runActorHost } from "./actor-host.ts";
import { formatBuildErrors } from "./build-errors.ts";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      module: { type: "string" },
      name: { type: "string" },
      instance: { type: "string", default: "0" },
      pool: { type: "string", default: "1" },
      dir: { type: "string" },
      concurrency: { type: "string" },
      window: { type: "string" },
      "shutdown-ms": { type: "string" },
    },
  });
  if (!values.module || !values.name || !values.dir) {
    console.error("actor host: --module, --name and --dir are required");
    process.exit(2);
  }
  const optionalNumber = (text: string | undefined) => (text === undefined ? undefined : Number(text));
  try {
    await runActorHost({
      module: values.module,
      name: values.name,
      instance: Number(values.instance),
      pool: Number(values.pool),
      dir: values.dir,
      concurrency: optionalNumber(values.concurrency),
      window: optionalNumber(values.window),
      shutdownMs: optionalNumber(values["shutdown-ms"]),
      token: process.env.HERMES_MESH_TOKEN || undefined,
      durable: process.env.HERMES_ACTOR_DURABLE === "1",
      events: process.env.HERMES_EVENTS !== "0",
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

// Not top-level await: this entry is also bundled as CommonJS with bytecode (actor-host-bundle.ts).
void main();
