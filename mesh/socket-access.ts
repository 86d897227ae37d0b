/**
 * Who may reach a mesh's sockets. By default only the user running the mesh: its directory is
 * 0700 and every socket 0600. With `mesh.socket_group` the members of one group may too: the
 * directories members connect into take that group (setgid, so what is made in them gets it)
 * and every socket is 0660 with it (docs/actors.md, "Sharing a mesh with other users").
 *
 * Here: the modes, how a listener learns which group its socket is for, applying a mode and
 * group to a path, and the coded error that explains a refused connect. Only numeric ids cross
 * this module's API; names are read from /etc/group and /etc/passwd for messages (and for the
 * mesh file's `socket_group`, which may name its group).
 */
import { chmodSync, chownSync, readFileSync, statSync, type Stats } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { clientsDir, meshInfoPath, type MeshInfo } from "./control-protocol.ts";
import { ErrorCode, HermesError } from "./errors.ts";

/** The modes of a mesh's files and directories, private (the default) and shared with a group. */
export const AccessMode = {
  /** The mesh directory of a private mesh, and any socket directory made on the way. */
  PRIVATE_DIR: 0o700,
  /** A socket, and mesh.json, of a private mesh. */
  PRIVATE_FILE: 0o600,
  /**
   * The mesh directory of a shared mesh: the group may enter it and connect to its sockets, but
   * not create, replace or remove anything in it (it could otherwise listen in the
   * supervisor's place). Setgid: the sockets, logs/ and data/ made in it get the group.
   */
  SHARED_DIR: 0o2750,
  /**
   * `clients/`, `logs/` and `data/` of a shared mesh: members of the group make their sockets,
   * event logs and durable stores there. Sticky: nobody removes or renames another's file.
   */
  SHARED_MEMBER_DIR: 0o3770,
  /** An event log in a shared mesh: the group reads it (the gateway's trace view), only its writer writes. */
  SHARED_LOG: 0o640,
  /** A socket of a shared mesh: its owner and the group may connect. */
  SHARED_SOCKET: 0o660,
  /** mesh.json of a shared mesh: the group's clients read it. */
  SHARED_FILE: 0o640,
} as const;

/**
 * The environment variable through which the supervisor tells the members it spawns (actors,
 * the gateway) the numeric gid their sockets are for. Set, it applies to every socket the
 * process listens on.
 */
export const SOCKET_GROUP_ENV = "HERMES_SOCKET_GROUP";

/** The name of a mesh's `clients/` directory. */
const CLIENTS = basename(clientsDir("/"));

/**
 * The group a socket about to be created at `path` is for, or undefined for a private one: the
 * gid in HERMES_SOCKET_GROUP (a member the supervisor spawned), else, for a socket in a mesh's
 * `clients/` directory (a listening client), the `socket_group` of that mesh's mesh.json.
 * (Elsewhere mesh.json is not consulted: one left by a killed supervisor must not decide the
 * mode of the next one's sockets.)
 *
 * @example
 * socketGroupFor("/tmp/hermes-mesh-demo/clients/cli-01h.sock"); // 1001 when the mesh sets socket_group
 */
export function socketGroupFor(path: string): number | undefined {
  const fromEnv = process.env[SOCKET_GROUP_ENV];
  if (fromEnv) {
    const gid = Number(fromEnv);
    if (!isGid(gid)) throw new HermesError(ErrorCode.INVALID_REQUEST, `${SOCKET_GROUP_ENV} must be a numeric gid, got ${JSON.stringify(fromEnv)}`);
    return gid;
  }
  const dir = dirname(resolve(path));
  if (basename(dir) !== CLIENTS) return undefined;
  try {
    const info = JSON.parse(readFileSync(meshInfoPath(dirname(dir)), "utf8")) as MeshInfo;
    return isGid(info.socket_group) ? info.socket_group : undefined;
  } catch {
    return undefined; // no mesh.json (not a mesh's directory), or unreadable: private
  }
}

/**
 * Gives `path` the group `gid` (when given), then `mode`: in that order, so that a file made
 * private is never open to the wrong group. A group this process may not give files to (it is
 * not a member) is code 2 saying so.
 *
 * @example
 * setAccess(join(dir, "supervisor.sock"), AccessMode.SHARED_SOCKET, 1001);
 */
export function setAccess(path: string, mode: number, gid?: number): void {
  if (gid !== undefined) {
    try {
      chownSync(path, statSync(path).uid, gid);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "EPERM") throw error;
      throw new HermesError(
        ErrorCode.INVALID_REQUEST,
        `cannot give ${path} to group ${describeGroup(gid)}: this process (${describeCaller(callerIds())}) is not a member of it. ` +
          `Add the user running the mesh to that group (then log in again), or set mesh.socket_group to a group it is in`,
        { path, gid, setting: "mesh.socket_group" },
        { cause: error },
      );
    }
  }
  chmodSync(path, mode);
}

/**
 * The numeric gid of a group name, from /etc/group; undefined when it has no such group.
 *
 * @example
 * groupId("users"); // 100
 */
export function groupId(name: string): number | undefined {
  return idFile("/etc/group").find((entry) => entry.name === name)?.id;
}

/**
 * The code-5 error (`auth_method: "unix_permissions"`) for a connect to the Unix socket `path`
 * that the system refused (EACCES, EPERM): which directory or socket refused, its owner,
 * group and mode, this process's uid and groups, and what would allow it.
 *
 * @example
 * // cannot connect to unix:/tmp/m/supervisor.sock: permission denied (EACCES): the directory /tmp/m
 * // is owned by alice (uid 1000), group alice (gid 1000), mode 0700; you are bob (uid 1001), groups
 * // bob (1001). Only its owner may enter it: ask the mesh's owner to set mesh.socket_group ...
 */
export function connectRefused(path: string, cause: NodeJS.ErrnoException): HermesError {
  const ids = callerIds();
  const refused = ids && whatRefuses(path, ids);
  const you = describeCaller(ids);
  const head = `cannot connect to unix:${path}: permission denied (${cause.code})`;
  const fields = { auth_method: "unix_permissions", errno: cause.code, ...(ids && { uid: ids.uid, gids: ids.gids }) };
  if (!refused) {
    const why = ids
      ? "the modes of the socket and its directories let you connect, so the refusal comes from elsewhere: a group you were added to after this session began (log in again), or a security module (AppArmor, SELinux)"
      : "this process could not read its own uid and groups (on Deno: --allow-sys=uid,gid) to tell why";
    return new HermesError(ErrorCode.AUTH_FAILED, `${head}; you are ${you}: ${why}`, { ...fields, path }, { cause });
  }
  const { at, stat, kind } = refused;
  const subject = kind === "socket" ? "the socket" : `the directory ${at}`;
  const mode = octal(stat.mode);
  const owned = `${subject} is owned by ${describeUser(stat.uid)}, group ${describeGroup(stat.gid)}, mode ${mode}`;
  const bit = kind === "socket" ? WRITE : SEARCH;
  // The socket's own directory, and the mesh directory above a client's: the mesh's to open up.
  const socketDir = dirname(resolve(path));
  const meshOwned = kind === "socket" || at === socketDir || (basename(socketDir) === CLIENTS && at === dirname(socketDir));
  let hint: string;
  if (!meshOwned) {
    hint = `It is on the way to the mesh directory and does not let you in: its owner must allow it (chmod g+x with a group you are in, or o+x), or the mesh must run in another directory (mesh.dir)`;
  } else if ((stat.mode & (bit << 3)) !== 0 && !ids.gids.includes(stat.gid)) {
    const group = groupNameOf(stat.gid) ?? String(stat.gid);
    const user = userNameOf(ids.uid) ?? "<you>";
    hint = `Members of group ${group} may ${kind === "socket" ? "connect" : "enter it"}: add your user to group ${group} (for example \`usermod -aG ${group} ${user}\`, then log in again)`;
  } else {
    hint = `Only its owner may ${kind === "socket" ? "connect" : "enter it"}: ask the mesh's owner to set mesh.socket_group to a group you are in (docs/actors.md, "Sharing a mesh with other users")`;
  }
  return new HermesError(ErrorCode.AUTH_FAILED, `${head}: ${owned}; you are ${you}. ${hint}`, {
    ...fields,
    path: at,
    owner_uid: stat.uid,
    group_gid: stat.gid,
    mode,
    setting: "mesh.socket_group",
  }, { cause });
}

/** True for the errors of a connect the system refused for want of permission. */
export function isPermissionError(error: unknown): error is NodeJS.ErrnoException {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "EACCES" || code === "EPERM";
}

// ---- permissions as the kernel checks them, for the explanation ----

const SEARCH = 1;
const WRITE = 2;

interface Caller {
  uid: number;
  gids: number[];
}

/**
 * This process's effective uid and groups: from `process` (Deno asks for --allow-sys=uid,gid,
 * which actor hosts have), else from /proc/self/status; undefined when neither answers.
 */
function callerIds(): Caller | undefined {
  try {
    const uid = process.geteuid?.() ?? process.getuid!();
    const gids = [process.getgid!(), ...(process.getgroups?.() ?? [])];
    return { uid, gids: [...new Set(gids)] };
  } catch {
    // Not allowed (Deno without --allow-sys), or no such calls: the proc file below.
  }
  try {
    const status = readFileSync("/proc/self/status", "utf8");
    // "Uid:\treal\teffective\tsaved\tfs", "Groups:\t100 1001"
    const ids = (key: string) => status.match(new RegExp(`^${key}:(.*)$`, "m"))?.[1]?.trim().split(/\s+/).filter(Boolean).map(Number) ?? [];
    const uid = ids("Uid")[1];
    const gid = ids("Gid")[1];
    if (uid === undefined || gid === undefined) return undefined;
    return { uid, gids: [...new Set([gid, ...ids("Groups")])] };
  } catch {
    return undefined;
  }
}

/** The first directory on the way to `path` this caller may not search, else the socket if it may not write it. */
function whatRefuses(path: string, caller: Caller): { at: string; stat: Stats; kind: "directory" | "socket" } | undefined {
  const full = resolve(path);
  const dirs: string[] = [];
  for (let dir = dirname(full); ; dir = dirname(dir)) {
    dirs.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  try {
    for (const dir of dirs) {
      const stat = statSync(dir);
      if (!allows(stat, caller, SEARCH)) return { at: dir, stat, kind: "directory" };
    }
    const stat = statSync(full);
    return allows(stat, caller, WRITE) ? undefined : { at: full, stat, kind: "socket" };
  } catch {
    return undefined; // gone meanwhile, or not ours to stat: nothing certain to say
  }
}

function allows(stat: Stats, caller: Caller, bit: number): boolean {
  if (caller.uid === 0) return true;
  if (stat.uid === caller.uid) return (stat.mode & (bit << 6)) !== 0;
  if (caller.gids.includes(stat.gid)) return (stat.mode & (bit << 3)) !== 0;
  return (stat.mode & bit) !== 0;
}

// ---- names of ids, for messages ----

function describeCaller(caller: Caller | undefined): string {
  if (!caller) return "a user whose uid and groups could not be read";
  return `${describeUser(caller.uid)}, groups ${caller.gids.map((gid) => `${groupNameOf(gid) ?? "?"} (${gid})`).join(", ")}`;
}

function describeUser(uid: number): string {
  const name = userNameOf(uid);
  return name ? `${name} (uid ${uid})` : `uid ${uid}`;
}

function describeGroup(gid: number): string {
  const name = groupNameOf(gid);
  return name ? `${name} (gid ${gid})` : `gid ${gid}`;
}

function userNameOf(uid: number): string | undefined {
  return idFile("/etc/passwd").find((entry) => entry.id === uid)?.name;
}

function groupNameOf(gid: number): string | undefined {
  return idFile("/etc/group").find((entry) => entry.id === gid)?.name;
}

/** The name and id (third field) of each line of /etc/passwd or /etc/group; none when it cannot be read. */
function idFile(path: string): Array<{ name: string; id: number }> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  return text.split("\n").flatMap((line) => {
    const [name, , id] = line.split(":");
    return name && id !== undefined && /^\d+$/.test(id) ? [{ name, id: Number(id) }] : [];
  });
}

function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

function isGid(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value < 0xffffffff;
}
