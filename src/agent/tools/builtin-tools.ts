/** The built-in tools as one set, with the shell left out unless a host asks for it. */
import type { ToolDefinition } from "../tool-definition.ts";
import { calculatorTool } from "./calculator-tool.ts";
import { fileReadTool, fileWriteTool, type FileToolOptions } from "./file-tools.ts";
import { httpFetchTool, type HttpFetchOptions } from "./http-fetch-tool.ts";
import { shellTool, type ShellToolOptions } from "./shell-tool.ts";

export { calculatorTool } from "./calculator-tool.ts";
export { fileReadTool, fileWriteTool, type FileToolOptions } from "./file-tools.ts";
export { httpFetchTool, type HttpFetchOptions } from "./http-fetch-tool.ts";
export { HIDDEN_PATHS, shellTool, type ShellToolOptions } from "./shell-tool.ts";

/** Options of `builtinTools`. */
export interface BuiltinToolOptions {
  /** Sandbox of the file tools and the shell, when a call's context names none. */
  sandboxDir?: string;
  /** Origins `http_fetch` may reach (default: none, so it refuses every URL). */
  allowedOrigins?: readonly string[];
  /** Further `http_fetch` options: timeout, body cap, redirects. */
  http?: Omit<HttpFetchOptions, "allowedOrigins">;
  /** Further file tool options: size limit. */
  files?: Omit<FileToolOptions, "sandboxDir">;
  /** Registers `shell`. Off by default: a program runner is a decision, never an accident. */
  enableShell?: boolean;
  /** Further `shell` options: timeout, output cap, environment, bubblewrap path, hidden paths, `allowUnsandboxed`. */
  shell?: Omit<ShellToolOptions, "sandboxDir">;
}

/**
 * calculator, http_fetch, file_read and file_write, plus shell when `enableShell` is true.
 *
 * @example
 * const tools = new ToolRegistry(builtinTools({ sandboxDir: "./sandbox", allowedOrigins: ["https://api.example.com"] }));
 * tools.names(); // ["calculator", "http_fetch", "file_read", "file_write"]
 */
export function builtinTools(options: BuiltinToolOptions = {}): ToolDefinition[] {
  const { sandboxDir } = options;
  const tools: ToolDefinition[] = [
    calculatorTool(),
    httpFetchTool({ ...options.http, ...(options.allowedOrigins && { allowedOrigins: options.allowedOrigins }) }),
    fileReadTool({ ...options.files, ...(sandboxDir && { sandboxDir }) }),
    fileWriteTool({ ...options.files, ...(sandboxDir && { sandboxDir }) }),
  ];
  if (options.enableShell === true) tools.push(shellTool({ ...options.shell, ...(sandboxDir && { sandboxDir }) }));
  return tools;
}
