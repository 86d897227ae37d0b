import { parseArgs } from "node:util";
import { ControlClient } from "../../mesh/control-client.ts";
import { type RegistryEntry, Registry } from "../../mesh/registry.ts";
import { newMessageId } from "../../mesh/ids.ts";
import { MESH_ACCESS_OPTIONS, resolveMeshAccess, withAuthHint } from "./mesh-access.ts";

const USAGE = `Usage: hermes-mesh ps [--dir D] [--json] [--token-env NAME]

Shows the actors of a running mesh: address, pid, health, restarts, queue depth, in flight,
dead letters (envelopes it gave up on), seconds since the last heartbeat, capabilities.
The mesh's token, when it has one, is read from the variable --token-env names, else
$HERMES_MESH_TOKEN, else the variable the running mesh's file names (mesh.token_env).`;

/** `hermes-mesh ps`. */
export async function runPsCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { ...MESH_ACCESS_OPTIONS, json: { type: "boolean" }, help: { type: "boolean", short: "h" } } });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const access = resolveMeshAccess(values);
  const address = `ps-${newMessageId().slice(-8).toLowerCase()}`;
  const control = await withAuthHint(access, () => ControlClient.connect({ dir: access.dir, address, registry: new Registry(), token: access.token }));
  try {
    const reply = await control.ps();
    if (values.json) {
      console.log(JSON.stringify(reply, null, 2));
      return 0;
    }
    const mesh = reply.mesh as { name: string; dir: string; supervisor_pid: number; started_at: number };
    const entries = (reply.entries as Array<RegistryEntry & { heartbeat_age_ms: number | null; dead_letters?: number }>).filter((e) => !e.address.startsWith("ps-"));
    // Programs that joined from outside (clients, the gateway) are listed after the actors.
    entries.sort((a, b) => Number(a.kind === "client") - Number(b.kind === "client"));
    console.log(`mesh ${mesh.name}  supervisor pid ${mesh.supervisor_pid}  up ${Math.round((Date.now() - mesh.started_at) / 1000)} s  dir ${mesh.dir}`);
    // A mesh across hosts (docs/nats.md) names each member's host; a pid is only meaningful there.
    const hosts = entries.some((e) => e.host !== undefined);
    const kind = (e: RegistryEntry) => (e.external ? "external" : (e.kind ?? "actor"));
    const rows = entries.map((e) => [
      e.address, kind(e), ...(hosts ? [e.host ?? "-"] : []), String(e.pid ?? "-"), e.health, String(e.restarts), String(e.queueDepth), String(e.inFlight),
      String(e.dead_letters ?? 0), e.heartbeat_age_ms === null ? "-" : (e.heartbeat_age_ms / 1000).toFixed(1), e.capabilities.join(",") || "-",
    ]);
    printTable(["ADDRESS", "KIND", ...(hosts ? ["HOST"] : []), "PID", "HEALTH", "RESTARTS", "QUEUE", "IN-FLIGHT", "DEAD-LETTERS", "HEARTBEAT-S", "CAPABILITIES"], rows);
    return 0;
  } finally {
    await control.close();
  }
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [header, ...rows]) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
}
