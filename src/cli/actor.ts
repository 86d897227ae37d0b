import { basename, extname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { runActorHost } from "../actor/actor-host.ts";
import { formatBuildErrors } from "../actor/build-errors.ts";
import { HermesError } from "../../mesh/errors.ts";
import { MESH_ACCESS_OPTIONS, resolveMeshAccess, withAuthHint } from "./mesh-access.ts";

const USAGE = `Usage: hermes-mesh actor <module> [--dir D] [--name N] [--token-env NAME] [--grace-ms MS] [--concurrency C] [--durable]

Runs one actor outside the supervisor tree, as a member of the mesh in --dir (for example in
its own container, with the mesh directory on a shared volume). It registers with the mesh
token (from --token-env, $HERMES_MESH_TOKEN, or the variable the mesh file names), listens on
<dir>/<name>.sock, heartbeats, and shows as external in ps. The supervisor never signals it:
when it exits its address stays known as down, senders keep what is unacknowledged, and they
redeliver when it registers again (so restart it with your container runtime's policy).
--grace-ms forgets it that long after it goes. It exits when the mesh stops, and on Ctrl-C or
SIGTERM. --name defaults to the module's file name.`;

/** `hermes-mesh actor`: one external actor in the foreground (docs/actors.md, "External members"). */
export async function runActorCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      ...MESH_ACCESS_OPTIONS,
      name: { type: "string" },
      "grace-ms": { type: "string" },
      concurrency: { type: "string" },
      durable: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    console.error(`hermes-mesh actor: expected one actor module\n${USAGE}`);
    return 2;
  }
  const module = resolve(positionals[0]!);
  const name = values.name ?? basename(module, extname(module));
  const numberOf = (flag: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${flag} must be a positive integer, got '${text}'`);
    return n;
  };
  try {
    const access = resolveMeshAccess(values);
    const graceMs = numberOf("grace-ms", values["grace-ms"]);
    const concurrency = numberOf("concurrency", values.concurrency);
    await withAuthHint(access, () =>
      runActorHost({
        module, name, instance: 0, pool: 1, dir: access.dir,
        ...(access.token !== undefined && { token: access.token }),
        ...(concurrency !== undefined && { concurrency }),
        durable: values.durable === true,
        events: process.env.HERMES_EVENTS !== "0",
        external: graceMs !== undefined ? { graceMs } : {},
      }),
    );
  } catch (error) {
    const coded = error instanceof HermesError ? `error ${error.code} ${error.codeName}: ` : "";
    console.error(`hermes-mesh actor: ${coded}${formatBuildErrors(error) ?? (error as Error).message}`);
    return 1;
  }
  // The host runs until the mesh stops or a signal stops it; it exits the process itself then.
  return new Promise<number>(() => {});
}
