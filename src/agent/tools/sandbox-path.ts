/**
 * Confinement of the file and shell tools to a sandbox directory. A path is refused when it is
 * absolute, when `..` takes it out, or when a symlink on the way leads out: containment is
 * checked on real paths (symlinks resolved), not on the text.
 */
import { lstat, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ErrorCode } from "../../protocol/error-codes.ts";
import { HermesError } from "../../protocol/hermes-error.ts";
import type { ToolContext } from "../tool-definition.ts";

const EXPECTED = "a relative path inside the sandbox directory, such as notes/todo.txt";

/**
 * The real path of the sandbox a call is confined to: `ctx.sandboxDir`, else the directory the
 * tool was built with. None, or one that does not exist, is a host misconfiguration (code 7).
 *
 * @example
 * const root = await sandboxRoot(ctx, options.sandboxDir); // "/tmp/agent-sandbox"
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

/**
 * The real path `path` designates inside `root` (itself a real path), or a HermesError code 2
 * with `reason` and `expected`. The file may not exist yet (`file_write`): then its nearest
 * existing ancestor is what must be inside, and a dangling symlink on the way is refused,
 * since writing through it would create its target wherever it points.
 *
 * @example
 * await resolveInSandbox("/tmp/box", "notes/a.txt"); // "/tmp/box/notes/a.txt"
 * await resolveInSandbox("/tmp/box", "../etc/passwd"); // throws code 2: escapes the sandbox
 */
export async function resolveInSandbox(root: string, path: string): Promise<string> {
  if (path.includes("\0")) refuse(path, "contains a NUL character");
  if (isAbsolute(path)) refuse(path, "is an absolute path");
  const target = resolve(root, path);
  if (!inside(root, target)) refuse(path, "escapes the sandbox through '..'");
  // Walk up to the nearest entry that exists, resolve its symlinks, then put the rest back.
  const missing: string[] = [];
  let existing = target;
  for (;;) {
    try {
      const real = await realpath(existing);
      if (!inside(root, real)) refuse(path, "leads outside the sandbox through a symlink");
      return join(real, ...missing.reverse());
    } catch (error) {
      if (error instanceof HermesError) throw error;
      if (!isCode(error, "ENOENT")) throw pathError(path, error);
      if (await isLink(existing)) refuse(path, "goes through a symlink whose target does not exist");
      missing.push(basename(existing));
      existing = dirname(existing);
    }
  }
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

async function isLink(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isSymbolicLink();
  } catch {
    return false;
  }
}

function refuse(path: string, why: string): never {
  throw new HermesError(ErrorCode.INVALID_REQUEST, `path ${JSON.stringify(path)} refused: it ${why}`, {
    reason: `${JSON.stringify(path)} ${why}`,
    expected: EXPECTED,
  });
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
  for (const [code, why] of Object.entries(reasons)) {
    if (isCode(error, code)) return new HermesError(ErrorCode.INVALID_REQUEST, `${JSON.stringify(path)} ${why}`, { reason: `${JSON.stringify(path)} ${why}`, expected: EXPECTED });
  }
  return HermesError.from(error);
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}
