import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { connectMesh } from "../actor/connect-mesh.ts";
import type { Route } from "../../mesh/envelope.ts";
import { HermesError } from "../../mesh/errors.ts";
import { MESH_ACCESS_OPTIONS, resolveMeshAccess, withAuthHint } from "./mesh-access.ts";

const USAGE = `Usage: hermes-mesh send <target> '<json payload>' | @file.json | - [--dir D] [--timeout ms] [--capability] [--topic] [--event] [--token-env NAME]

Sends a request to <target> (an actor name, "name#i" address or stable id) and prints the
response payload as JSON. The payload is JSON text, @file to read it from a file, or - to
read it from standard input (for payloads too large for a command line). --capability / --topic route by capability or topic instead;
--event sends an event and waits for nothing. Progress messages are printed to stderr.
The mesh's token, when it has one, is read from the variable --token-env names, else
$HERMES_MESH_TOKEN, else the variable the running mesh's file names (mesh.token_env).`;

/** `hermes-mesh send`: exit 0 with the answer on stdout, 1 with the coded error on stderr. */
export async function runSendCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...MESH_ACCESS_OPTIONS,
      timeout: { type: "string", default: "10000" },
      capability: { type: "boolean" },
      topic: { type: "boolean" },
      event: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 2) {
    console.error(`hermes-mesh send: expected a target and a JSON payload\n${USAGE}`);
    return 2;
  }
  const [target, argument] = positionals as [string, string];
  let text: string;
  try {
    text = await payloadText(argument);
  } catch (error) {
    console.error(`hermes-mesh send: cannot read the payload from ${argument}: ${(error as Error).message}`);
    return 2;
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch (error) {
    console.error(`hermes-mesh send: the payload${argument === text ? "" : ` in ${argument}`} is not JSON: ${(error as Error).message}`);
    return 2;
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    console.error("hermes-mesh send: the payload must be a JSON object (a map), not an array, string or null");
    return 2;
  }
  const timeoutMs = Number(values.timeout);
  const route: Route = values.capability ? { capability: target } : values.topic ? { topic: target } : { target_agent: target };
  const access = resolveMeshAccess(values);
  const mesh = await withAuthHint(access, () => connectMesh({ dir: access.dir, name: "cli", token: access.token }));
  try {
    if (values.event) {
      const count = route.topic ? mesh.publish(target, payload as Record<string, unknown>) : (mesh.send(route, payload as Record<string, unknown>), 1);
      console.log(JSON.stringify({ sent: count }));
      return 0;
    }
    const reply = await mesh.request(route, payload as Record<string, unknown>, {
      timeoutMs,
      onProgress: (p) => console.error(`progress ${JSON.stringify(p)}`),
    });
    console.log(JSON.stringify(reply.payload));
    return 0;
  } catch (error) {
    const e = HermesError.from(error);
    console.error(`error ${e.code} ${e.codeName}: ${e.message}${Object.keys(e.fields).length ? ` ${JSON.stringify(e.fields)}` : ""}`);
    return 1;
  } finally {
    await mesh.close();
  }
}

/**
 * The payload's JSON text: the argument itself, `@path` a file's contents, `-` standard input
 * (as curl's -d). Node's APIs: the CLI runs on Bun and on Deno.
 */
async function payloadText(argument: string): Promise<string> {
  if (argument === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
  if (argument.startsWith("@")) return await readFile(argument.slice(1), "utf8");
  return argument;
}
