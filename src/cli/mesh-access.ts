import { existsSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { controlSocketPath, meshInfoPath, type MeshInfo } from "../../mesh/control-protocol.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

/** The options every command that talks to a running mesh accepts (parseArgs form). */
export const MESH_ACCESS_OPTIONS = {
  dir: { type: "string" },
  "token-env": { type: "string" },
} as const;

/** Where a command finds its mesh and the token it proves itself with. */
export interface MeshAccess {
  dir: string;
  token: string | undefined;
  /** The variable the token came from, or the ones that were looked at when there is none. */
  tokenSource: string;
  /** One sentence on what to set when the mesh refuses the token (code 5). */
  authHint: string;
}

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

/**
 * The directory and token for a command. The token comes from the variable `--token-env` names,
 * else $HERMES_MESH_TOKEN, else the variable the running mesh's file names (`mesh.token_env`,
 * published in <dir>/mesh.json), so a user who exported what the mesh file says is done.
 *
 * @example
 * const access = resolveMeshAccess({ dir: "/tmp/hermes-mesh-demo" });
 * const mesh = await withAuthHint(access, () => connectMesh({ dir: access.dir, name: "cli", token: access.token }));
 */
export function resolveMeshAccess(values: { dir?: string; "token-env"?: string }): MeshAccess {
  const dir = resolveMeshDir(values.dir);
  const meshVariable = readMeshInfo(dir)?.token_env ?? undefined;
  const candidates = [values["token-env"], "HERMES_MESH_TOKEN", meshVariable].filter((v): v is string => Boolean(v));
  const variables = [...new Set(candidates)];
  const found = variables.find((name) => process.env[name]);
  const wanted = values["token-env"] ?? meshVariable ?? "HERMES_MESH_TOKEN";
  const authHint = found
    ? `the token in $${found} is not this mesh's: set $${wanted} to the value of the mesh's own variable${meshVariable ? ` (its mesh file's mesh.token_env is ${meshVariable})` : ""}, or name another variable with --token-env NAME`
    : `this mesh needs its token: export ${wanted}=<token>${wanted !== "HERMES_MESH_TOKEN" ? " (the variable its mesh file's mesh.token_env names) or HERMES_MESH_TOKEN" : ""}, or name the variable that holds it with --token-env NAME`;
  return { dir, token: found ? process.env[found] : undefined, tokenSource: found ?? variables.join(", "), authHint };
}

/** Runs `connect`; a refusal of the token (code 5) comes back saying which variable or flag would fix it. */
export async function withAuthHint<T>(access: MeshAccess, connect: () => Promise<T>): Promise<T> {
  try {
    return await connect();
  } catch (error) {
    const e = HermesError.from(error);
    // A Unix permission refusal (mesh.socket_group) says what to do itself: no token hint there.
    if (e.code !== ErrorCode.AUTH_FAILED || e.fields.auth_method === "unix_permissions") throw error;
    throw new HermesError(ErrorCode.AUTH_FAILED, `${e.message}: ${access.authHint}`, e.fields);
  }
}

function readMeshInfo(dir: string): MeshInfo | undefined {
  try {
    return JSON.parse(readFileSync(meshInfoPath(dir), "utf8")) as MeshInfo;
  } catch {
    return undefined; // an older mesh, or none: the defaults apply
  }
}
