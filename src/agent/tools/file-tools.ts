/**
 * `file_read` and `file_write`: regular text files inside the agent's sandbox directory, nowhere
 * else (sandbox-path.ts decides what "inside" means, on open descriptors), read and written
 * through the descriptor that was checked.
 */
import { z } from "zod";
import { ErrorCode, HermesError } from "../../../mesh/errors.ts";
import { defineTool } from "../tool-definition.ts";
import { openInSandbox, sandboxRoot } from "./sandbox-path.ts";

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
 * at `maxBytes`. Paths outside the sandbox or through any symlink, missing files, directories,
 * FIFOs, sockets, devices and files with more than one hard link are code 2, at once.
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
      const file = await openInSandbox(root, path, "read");
      try {
        const buffer = new Uint8Array(Math.min(file.size, maxBytes));
        let length = 0;
        while (length < buffer.byteLength) {
          const { bytesRead } = await file.handle.read(buffer, length, buffer.byteLength - length, length);
          if (bytesRead === 0) break;
          length += bytesRead;
        }
        const content = new TextDecoder().decode(buffer.subarray(0, length));
        return { path: file.path, content, bytes: file.size, truncated: file.size > maxBytes };
      } finally {
        await file.handle.close();
      }
    },
  });
}

/**
 * `file_write`: `{ path, content, append? }` → `{ path, bytes }`; creates missing directories
 * inside the sandbox, replaces the file unless `append`. Content over `maxBytes` is code 6; the
 * paths `file_read` refuses are refused here too (code 2), and the refused file is left as it was.
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
      const file = await openInSandbox(root, path, append ? "append" : "write");
      try {
        await file.handle.writeFile(data);
        return { path: file.path, bytes: data.byteLength };
      } finally {
        await file.handle.close();
      }
    },
  });
}
