/**
 * `file_read` and `file_write`: text files inside the agent's sandbox directory, nowhere else
 * (sandbox-path.ts decides what "inside" means).
 */
import { constants } from "node:fs";
import { mkdir, open, stat } from "node:fs/promises";
import { dirname, relative } from "node:path";
import { z } from "zod";
import { ErrorCode } from "../../protocol/error-codes.ts";
import { HermesError } from "../../protocol/hermes-error.ts";
import { defineTool } from "../tool-definition.ts";
import { pathError, resolveInSandbox, sandboxRoot } from "./sandbox-path.ts";

/** Options of the file tools. */
export interface FileToolOptions {
  /** The sandbox when the call's context names none. */
  sandboxDir?: string;
  /** Largest file read or written, in bytes (default 1 MiB); a longer read is truncated. */
  maxBytes?: number;
}

const DEFAULT_MAX_BYTES = 1024 * 1024;
const PATH = z.string().min(1).describe("path relative to the sandbox directory, e.g. notes/todo.txt");

/**
 * `file_read`: `{ path }` → `{ path, content, bytes, truncated }`, the file as UTF-8 text, cut
 * at `maxBytes`. Paths outside the sandbox, missing files and directories are code 2.
 *
 * @example
 * const read = fileReadTool({ sandboxDir: "/tmp/box" });
 * await registry.register(read).call("file_read", { path: "notes/a.txt" }, ctx);
 */
export function fileReadTool(options: FileToolOptions = {}) {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  return defineTool({
    name: "file_read",
    description: `Reads a text file from the sandbox directory (at most ${maxBytes} bytes). Paths are relative to the sandbox.`,
    schema: z.object({ path: PATH }),
    async run({ path }, ctx) {
      const root = await sandboxRoot(ctx, options.sandboxDir, "file_read");
      const real = await resolveInSandbox(root, path);
      try {
        const info = await stat(real);
        if (info.isDirectory()) throw Object.assign(new Error("is a directory"), { code: "EISDIR" });
        const content = await Bun.file(real).slice(0, maxBytes).text();
        return { path: relative(root, real), content, bytes: info.size, truncated: info.size > maxBytes };
      } catch (error) {
        throw pathError(path, error);
      }
    },
  });
}

/**
 * `file_write`: `{ path, content, append? }` → `{ path, bytes }`; creates missing directories
 * inside the sandbox, replaces the file unless `append`. Content over `maxBytes` is code 6.
 *
 * @example
 * await registry.call("file_write", { path: "out/result.json", content: "{}" }, ctx); // { ok: true, value: { path: "out/result.json", bytes: 2 } }
 */
export function fileWriteTool(options: FileToolOptions = {}) {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  return defineTool({
    name: "file_write",
    description: `Writes a text file in the sandbox directory (at most ${maxBytes} bytes), creating directories as needed. Paths are relative to the sandbox.`,
    schema: z.object({
      path: PATH,
      content: z.string().describe("the text to write"),
      append: z.boolean().default(false).describe("add to the end instead of replacing the file"),
    }),
    async run({ path, content, append }, ctx) {
      const data = new TextEncoder().encode(content);
      if (data.byteLength > maxBytes) {
        throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, `content of ${data.byteLength} bytes is over the ${maxBytes}-byte limit`, {
          resource: "file_write_bytes",
          used: data.byteLength,
          limit: maxBytes,
        });
      }
      const root = await sandboxRoot(ctx, options.sandboxDir, "file_write");
      const real = await resolveInSandbox(root, path);
      try {
        await mkdir(dirname(real), { recursive: true });
        // O_NOFOLLOW: a symlink swapped in after the check above is refused, not followed.
        const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | (append ? constants.O_APPEND : constants.O_TRUNC);
        const file = await open(real, flags, 0o644);
        try {
          await file.writeFile(data);
        } finally {
          await file.close();
        }
        return { path: relative(root, real), bytes: data.byteLength };
      } catch (error) {
        throw pathError(path, error);
      }
    },
  });
}
