/**
 * Confinement of the file tools to a sandbox directory. A path is refused when it is absolute,
 * when `..` takes it out, when any of its components is a symlink (inside or out, dangling or
 * not), when it names anything but a regular file, or a file with more than one hard link.
 *
 * Why descriptors and not paths: a check on a path is stale by the time the path is used (a
 * directory can be swapped for a symlink in between). So the path is walked one component at a
 * time from a descriptor of the sandbox root, each step opened with O_NOFOLLOW relative to the
 * descriptor of the step before, through `/proc/self/fd/<dir>/<name>` (Node has no `openat`; the
 * kernel resolves that magic link to the open directory itself, not to its path again). Every
 * check after that is made on the open descriptor, and reads and writes go through it.
 * This needs Linux's /proc; elsewhere the file tools refuse to work (code 7).
 */
import { constants, existsSync } from "node:fs";
import { lstat, mkdir, open, readlink, realpath, unlink, type FileHandle } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { ErrorCode, HermesError } from "../../../mesh/errors.ts";
import type { ToolContext } from "../tool-definition.ts";

const EXPECTED = "a relative path inside the sandbox directory, such as notes/todo.txt";
const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_APPEND, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;
/** O_NONBLOCK: opening a FIFO returns at once instead of waiting for its other end. */
const FILE_FLAGS = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
const FD_DIR = "/proc/self/fd";

/**
 * The real path of the sandbox a call is confined to: `ctx.sandboxDir`, else the directory the
 * tool was built with. None, or one that does not exist, is a host misconfiguration (code 7).
 *
 * @example
 * const root = await sandboxRoot(ctx, options.sandboxDir, "file_read"); // "/tmp/agent-sandbox"
 */
export async function sandboxRoot(ctx: ToolContext, fallback: string | undefined, tool: string): Promise<string> {
  const dir = ctx.sandboxDir ?? fallback;
  if (!dir) throw new HermesError(ErrorCode.INTERNAL, `${tool} has no sandbox directory configured`);
  try {
    return await realpath(dir);
  } catch (error) {
    throw new HermesError(ErrorCode.INTERNAL, `${tool}: the sandbox directory ${dir} is not usable`, {}, { cause: error });
  }
}

/** How `openInSandbox` opens: to read, to replace the content, or to append to it. */
export type OpenMode = "read" | "write" | "append";

/** An open regular file inside the sandbox: its descriptor, its path relative to the root, its size when opened. */
export interface SandboxFile {
  handle: FileHandle;
  path: string;
  size: number;
}

/**
 * Opens `path` inside `root` (a real path) without following any symlink, and checks on the
 * descriptor that it is a regular file with one link, inside the root. `write` and `append`
 * create missing directories and the file (exclusively, so never through a link); `write`
 * empties the file only after the checks, so a refused file is never changed. Any refusal is
 * a HermesError code 2 with `reason` and `expected`. The caller closes `handle`.
 *
 * @example
 * const file = await openInSandbox("/tmp/box", "notes/a.txt", "read");
 * try { await file.handle.read(buffer, 0, 64, 0); } finally { await file.handle.close(); }
 * await openInSandbox("/tmp/box", "../etc/passwd", "read"); // throws code 2: escapes the sandbox through '..'
 */
export async function openInSandbox(root: string, path: string, mode: OpenMode): Promise<SandboxFile> {
  const parts = componentsOf(root, path);
  if (!existsSync(FD_DIR)) throw new HermesError(ErrorCode.INTERNAL, `the file tools need ${FD_DIR} (Linux) to open files without following symlinks`);
  const name = parts.pop();
  if (name === undefined) throw pathError(path, { code: "EISDIR" });
  const dir = await openDirectory(root, parts, path, mode !== "read");
  try {
    const { handle, created } = await openEntry(dir, name, root, path, mode);
    try {
      const size = await checkDescriptor(handle, root, path);
      if (mode === "write") await handle.truncate(0);
      return { handle, path: [...parts, name].join("/"), size };
    } catch (error) {
      await handle.close();
      // Only reachable if the directory was moved out from under us: take back what we made.
      if (created && isOutside(error)) await unlink(`${FD_DIR}/${dir.fd}/${name}`).catch(() => {});
      throw error;
    }
  } finally {
    await dir.close();
  }
}

/** The textual checks: no NUL, not absolute, `..` never above the root. Returns the components. */
function componentsOf(root: string, path: string): string[] {
  if (path.includes("\0")) refuse(path, "contains a NUL character");
  if (isAbsolute(path)) refuse(path, "is an absolute path");
  const target = resolve(root, path);
  if (!inside(root, target)) refuse(path, "escapes the sandbox through '..'");
  const rel = relative(root, target);
  return rel === "" ? [] : rel.split(sep);
}

/** The directory holding the file, walked from the root with no symlink followed; `create` makes missing ones. */
async function openDirectory(root: string, parts: readonly string[], path: string, create: boolean): Promise<FileHandle> {
  let dir = await open(root, O_RDONLY | O_DIRECTORY);
  try {
    for (const name of parts) {
      const at = `${FD_DIR}/${dir.fd}/${name}`;
      let next: FileHandle;
      try {
        next = await open(at, DIR_FLAGS);
      } catch (error) {
        if (!(create && isCode(error, "ENOENT"))) throw await refusalAt(dir, name, root, path, error);
        await mkdir(at, 0o755).catch((e: unknown) => {
          if (!isCode(e, "EEXIST")) throw pathError(path, e);
        });
        // What is there now may be a symlink someone raced in: opened with O_NOFOLLOW again.
        try {
          next = await open(at, DIR_FLAGS);
        } catch (again) {
          throw await refusalAt(dir, name, root, path, again);
        }
      }
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (error) {
    await dir.close();
    throw error;
  }
}

/** The file itself, in the verified directory `dir`. New files are created with O_EXCL, which never follows a link. */
async function openEntry(dir: FileHandle, name: string, root: string, path: string, mode: OpenMode): Promise<{ handle: FileHandle; created: boolean }> {
  const at = `${FD_DIR}/${dir.fd}/${name}`;
  if (mode === "read") {
    try {
      return { handle: await open(at, O_RDONLY | FILE_FLAGS), created: false };
    } catch (error) {
      throw await refusalAt(dir, name, root, path, error);
    }
  }
  const flags = O_WRONLY | FILE_FLAGS | (mode === "append" ? O_APPEND : 0);
  // Open the existing file, else create it; a file created or removed in between just retries.
  for (let attempt = 0; ; attempt++) {
    try {
      return { handle: await open(at, flags), created: false };
    } catch (error) {
      if (!isCode(error, "ENOENT") || attempt === 3) throw await refusalAt(dir, name, root, path, error);
    }
    try {
      return { handle: await open(at, flags | O_CREAT | O_EXCL, 0o644), created: true };
    } catch (error) {
      if (!isCode(error, "EEXIST") || attempt === 3) throw await refusalAt(dir, name, root, path, error);
    }
  }
}

/** Checks on the descriptor, which no later swap can change: a regular file, one link, inside the root. Returns its size. */
async function checkDescriptor(handle: FileHandle, root: string, path: string): Promise<number> {
  const info = await handle.stat();
  if (info.isDirectory()) throw pathError(path, { code: "EISDIR" });
  if (!info.isFile()) refuse(path, "is not a regular file (a FIFO, socket or device), refused");
  if (info.nlink !== 1) refuse(path, `has ${info.nlink} hard links, and a file with more than one is refused (another link may be outside the sandbox)`);
  const real = await readlink(`${FD_DIR}/${handle.fd}`);
  if (!inside(root, real)) throw Object.assign(refusal(path, "leads outside the sandbox"), { [OUTSIDE]: true });
  return info.size;
}

const OUTSIDE = Symbol("outside");
function isOutside(error: unknown): boolean {
  return typeof error === "object" && error !== null && OUTSIDE in error;
}

/**
 * The refusal for an open that failed at `at`. The decision is already made (nothing was
 * followed); looking at what is there only words the reason for the model.
 */
async function refusalAt(dir: FileHandle, name: string, root: string, path: string, error: unknown): Promise<HermesError> {
  if (!isCode(error, "ELOOP") && !isCode(error, "ENOTDIR") && !isCode(error, "ENXIO")) return pathError(path, error);
  const at = `${FD_DIR}/${dir.fd}/${name}`;
  const entry = await lstat(at).catch(() => undefined);
  if (!entry?.isSymbolicLink()) return isCode(error, "ENXIO") ? refusal(path, "is not a regular file (a FIFO, socket or device), refused") : pathError(path, error);
  const target = resolve(await readlink(`${FD_DIR}/${dir.fd}`), await readlink(at).catch(() => ""));
  const real = await realpath(target).catch(() => undefined);
  if (real === undefined) return refusal(path, "goes through a symlink whose target does not exist");
  if (!inside(root, real)) return refusal(path, "leads outside the sandbox through a symlink");
  return refusal(path, "goes through a symlink, and the file tools follow none");
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

function refusal(path: string, why: string): HermesError {
  return new HermesError(ErrorCode.INVALID_REQUEST, `path ${JSON.stringify(path)} refused: it ${why}`, {
    reason: `${JSON.stringify(path)} ${why}`,
    expected: EXPECTED,
  });
}

function refuse(path: string, why: string): never {
  throw refusal(path, why);
}

/** A file system error the model can act on, as code 2 (a wrong path), else code 7. */
export function pathError(path: string, error: unknown): HermesError {
  const reasons: Record<string, string> = {
    ENOENT: "does not exist",
    EISDIR: "is a directory, not a file",
    ENOTDIR: "goes through something that is not a directory",
    ELOOP: "is a symlink (or a loop of them), refused",
    EACCES: "is not accessible",
  };
  if (error instanceof HermesError) return error;
  for (const [code, why] of Object.entries(reasons)) {
    if (isCode(error, code)) return new HermesError(ErrorCode.INVALID_REQUEST, `${JSON.stringify(path)} ${why}`, { reason: `${JSON.stringify(path)} ${why}`, expected: EXPECTED });
  }
  return HermesError.from(error);
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}
