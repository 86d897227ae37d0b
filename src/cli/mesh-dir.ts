import { existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { controlSocketPath } from "../../mesh/control-protocol.ts";

/**
 * The socket directory a command talks to: `--dir`, else $HERMES_MESH_DIR, else the one
 * running mesh found under the temp directory. Throws a clear message when there is none or
 * several.
 */
export function resolveMeshDir(dir: string | undefined): string {
  if (dir) return dir;
  if (process.env.HERMES_MESH_DIR) return process.env.HERMES_MESH_DIR;
  const running = readdirSync(tmpdir())
    .filter((name) => name.startsWith("hermes-mesh-"))
    .map((name) => join(tmpdir(), name))
    .filter((path) => existsSync(controlSocketPath(path)));
  if (running.length === 1) return running[0]!;
  if (running.length === 0) throw new Error("no running mesh found: start one with `hermes-mesh up <mesh.yaml>` or pass --dir");
  throw new Error(`several meshes are running (${running.join(", ")}): pass --dir`);
}
