/**
 * External MCP servers as tools. Each server of an agents file's `mcp_servers` (a stdio command
 * or a Streamable HTTP URL) is connected with the official client, `@modelcontextprotocol/client`
 * (revision 2026-07-28, falling back to the `initialize` handshake of 2025 servers), and each of
 * its tools becomes a ToolDefinition named `mcp.<server>.<tool>`, its zod schema read from the
 * tool's JSON Schema. A call carries the Hermes deadline and cancellation to the server and its
 * progress notifications back; its failures come back as coded HermesErrors.
 */
import type { Client } from "@modelcontextprotocol/client";
import { z } from "zod";
import { ErrorCode, HermesError, isErrorCode } from "../../mesh/errors.ts";
import type { Logger } from "../../mesh/logger.ts";
import { VERSION } from "../version.ts";
import { defineTool, TOOL_NAME_PATTERN, type ToolContext, type ToolDefinition } from "./tool-definition.ts";
import { DEFAULT_TOOL_TIMEOUT_MS } from "./tool-registry.ts";

/** A server name in `mcp_servers` (it becomes the middle of the tool names). */
export const MCP_SERVER_NAME = /^[a-z][a-z0-9_-]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ARGV = "a list: the program and its arguments, e.g. [bun, server.ts]";
/** How much of a stdio server's stderr an error message quotes (errors reach the model): its last lines, at most this many characters. */
const STDERR_TAIL_LINES = 5;
const STDERR_TAIL_CHARS = 400;

/** One entry of `mcp_servers`: `command` (stdio) or `url` (Streamable HTTP), as written in agents.yaml. */
export const McpServerConfigSchema = z
  .strictObject({
    /** stdio: the program and its arguments, run without a shell. */
    command: z.array(z.string().min(1), { error: ARGV }).min(1, ARGV).optional(),
    /** stdio: variables added to the small default environment (HOME, PATH, ...); `${NAME}` is taken from the agent's. */
    env: z.record(z.string().regex(ENV_NAME, "an environment variable name"), z.string()).optional(),
    /** stdio: working directory, relative to the agents file (default: the agents file's directory). */
    cwd: z.string().min(1).optional(),
    /** Streamable HTTP: the MCP endpoint. */
    url: z.url({ protocol: /^https?$/, error: "an http:// or https:// URL" }).optional(),
    /** Streamable HTTP: header name → the environment variable holding its value (`Authorization: MCP_TOKEN`). */
    headers_env: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, "an HTTP header name"), z.string().regex(ENV_NAME, "an environment variable name")).optional(),
  })
  .superRefine((server, ctx) => {
    if ((server.command === undefined) === (server.url === undefined)) {
      ctx.addIssue({ code: "custom", message: server.url ? "either command (stdio) or url (Streamable HTTP), not both" : "needs command: [program, args...] (stdio) or url: http://... (Streamable HTTP)" });
    }
    if (server.url && (server.env || server.cwd)) ctx.addIssue({ code: "custom", path: [server.env ? "env" : "cwd"], message: "env and cwd are for stdio servers (command)" });
    if (server.command && server.headers_env) ctx.addIssue({ code: "custom", path: ["headers_env"], message: "headers_env is for Streamable HTTP servers (url)" });
  })
  .transform((server): McpServerConfig =>
    server.command
      ? { kind: "stdio", command: server.command, env: server.env ?? {}, ...(server.cwd && { cwd: server.cwd }) }
      : { kind: "http", url: server.url!, headers_env: server.headers_env ?? {} });

/** An MCP server to mount, as `McpServerConfigSchema` reads it. */
export type McpServerConfig =
  | { kind: "stdio"; command: string[]; env: Record<string, string>; cwd?: string }
  | { kind: "http"; url: string; headers_env: Record<string, string> };

/** Options of {@link mountMcpServers}. */
export interface McpMountOptions {
  /** Where connections, skipped tools and server trouble are logged (default: nowhere). */
  log?: Pick<Logger, "info" | "warn">;
  /** Deadline of starting or reaching one server and listing its tools (default 30 s). */
  startTimeoutMs?: number;
  /** Environment that `${NAME}` in `env` and `headers_env` read (default `process.env`). */
  env?: Record<string, string | undefined>;
}

/** A tool a server offers that was not mounted, and why. */
export interface SkippedMcpTool {
  server: string;
  tool: string;
  reason: string;
}

/** Mounted MCP servers: their tools, what was skipped, and `close()` (also `await using`). */
export interface McpMount extends AsyncDisposable {
  readonly tools: ToolDefinition[];
  readonly skipped: SkippedMcpTool[];
  readonly servers: Array<{ name: string; protocolVersion: string | undefined; pid: number | undefined }>;
  /** Disconnects every server; a stdio server is stopped: stdin closed, SIGTERM 2 s later, SIGKILL 2 s after that. */
  close(): Promise<void>;
}

/**
 * Connects to MCP servers (all at once) and turns their tools into `mcp.<server>.<tool>` tool
 * definitions. A tool whose name would break the tool name rule, or whose input schema zod
 * cannot read as an object, is skipped and logged. A server that cannot be started or reached
 * fails the whole mount with code 10 naming it and its command or URL (the others are closed).
 * What reaches an error or a log is redacted: a URL without its credentials and query, the values
 * that `${NAME}` and `headers_env` brought in replaced by `<redacted>`, and only the last few
 * lines of a stdio server's stderr.
 *
 * A call validates its arguments against the schema first (code 2), then runs with the call's
 * deadline (code 3) and signal (cancellation reaches the server); progress notifications go to
 * `ctx.onProgress`. An `isError` result or a JSON-RPC error is a HermesError with the Hermes
 * code the server put in `structuredContent` or `_meta["hermes-mesh/error"]` (an error payload
 * with `error_code`), else code 7; a server that died, or cannot be reached, code 10.
 *
 * @example
 * await using mcp = await mountMcpServers({
 *   files: { kind: "stdio", command: ["node", "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/tmp"], env: {} },
 *   search: { kind: "http", url: "http://127.0.0.1:8931/mcp", headers_env: { Authorization: "SEARCH_TOKEN" } },
 * }, { log: createLogger({ actor: "coder" }) });
 * const tools = new ToolRegistry([...builtinTools(), ...mcp.tools]);
 * tools.names(["mcp.files.*"]); // ["mcp.files.read_file", "mcp.files.list_directory", ...]
 * // Or the servers of an agents file: mountMcpServers(loadAgentsFile("agents.yaml").mcp_servers)
 */
export async function mountMcpServers(servers: Readonly<Record<string, McpServerConfig>>, options: McpMountOptions = {}): Promise<McpMount> {
  const opened = await Promise.allSettled(Object.entries(servers).map(([name, config]) => McpServerConnection.open(name, config, options)));
  const connections = opened.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  const failures = opened.flatMap((r) => (r.status === "rejected" ? [HermesError.from(r.reason, ErrorCode.UNAVAILABLE)] : []));
  if (failures.length > 0) {
    await Promise.all(connections.map((c) => c.close()));
    throw failures.length === 1 ? failures[0]! : new HermesError(ErrorCode.UNAVAILABLE, failures.map((f) => f.message).join("\n"), { servers: failures.map((f) => f.toPayload()) });
  }
  const tools: ToolDefinition[] = [];
  const skipped: SkippedMcpTool[] = [];
  for (const connection of connections) {
    for (const remote of connection.remoteTools) {
      const tool = toolOf(connection, remote);
      if (typeof tool !== "string") tools.push(tool);
      else {
        skipped.push({ server: connection.name, tool: remote.name, reason: tool });
        options.log?.warn(`MCP tool '${remote.name}' of server '${connection.name}' skipped: ${tool}`, { server: connection.name, tool: remote.name, reason: tool });
      }
    }
  }
  const close = () => Promise.all(connections.map((c) => c.close())).then(() => undefined);
  return {
    tools,
    skipped,
    servers: connections.map((c) => ({ name: c.name, protocolVersion: c.protocolVersion, pid: c.pid })),
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** The MCP servers a `tools:` list uses (`mcp.<server>.<tool>` or `mcp.<server>.*`), in order. */
export function mcpServersUsed(tools: readonly string[]): string[] {
  return [...new Set(tools.filter((t) => t.startsWith("mcp.")).map((t) => t.split(".")[1]!))];
}

type RemoteTool = { name: string; title?: string; description?: string; inputSchema: Record<string, unknown> };

/** The tool definition of a remote tool, or why it cannot be one. */
function toolOf(connection: McpServerConnection, remote: RemoteTool): ToolDefinition | string {
  const name = `mcp.${connection.name}.${remote.name}`;
  if (!TOOL_NAME_PATTERN.test(name)) return `'${name}' breaks the tool name rule ${TOOL_NAME_PATTERN.source}`;
  let schema: z.ZodType;
  try {
    schema = z.fromJSONSchema(remote.inputSchema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (error) {
    return `its input schema cannot be read: ${(error as Error).message}`;
  }
  if (!(schema instanceof z.ZodObject)) return "its input schema is not an object schema";
  const description = remote.description?.trim() || remote.title?.trim() || `Tool '${remote.name}' of MCP server '${connection.name}'`;
  try {
    return defineTool({ name, description, schema, run: (args, ctx) => connection.call(remote.name, args as Record<string, unknown>, ctx) });
  } catch (error) {
    const e = HermesError.from(error);
    return String(e.fields.reason ?? e.message);
  }
}

/** Connections still open, killed when the process exits without closing them (a crash). */
const live = new Set<McpServerConnection>();
let exitHook = false;

/** One connected server: the client, its transport, and how calls and their failures map. */
class McpServerConnection {
  readonly name: string;
  readonly remoteTools: RemoteTool[] = [];
  #client: Client;
  /** The stdio child's pid (none over HTTP). */
  #pid: () => number | undefined;
  #where: string;
  /** Takes the secrets of the configuration (a URL's query, expanded variables) out of a text. */
  #scrub: (text: string) => string;
  #gone: string | undefined;
  #closing = false;

  private constructor(name: string, client: Client, pid: () => number | undefined, where: string, scrub: (text: string) => string) {
    this.name = name;
    this.#client = client;
    this.#pid = pid;
    this.#where = where;
    this.#scrub = scrub;
  }

  static async open(name: string, config: McpServerConfig, options: McpMountOptions): Promise<McpServerConnection> {
    const env = options.env ?? process.env;
    const shownUrl = config.kind === "http" ? redactUrl(config.url) : "";
    const where = config.kind === "stdio" ? `command: ${config.command.join(" ")}` : `url: ${shownUrl}`;
    const [{ Client, StreamableHTTPClientTransport }, { StdioClientTransport }] = await Promise.all([import("@modelcontextprotocol/client"), import("@modelcontextprotocol/client/stdio")]);
    const secrets: string[] = [];
    const stderr = { tail: "" };
    let transport;
    if (config.kind === "stdio") {
      const childEnv = Object.fromEntries(Object.entries(config.env).map(([key, value]) => [key, expand(value, env, `${name}.env.${key}`, secrets)]));
      transport = new StdioClientTransport({ command: config.command[0]!, args: config.command.slice(1), env: childEnv, stderr: "pipe", ...(config.cwd && { cwd: config.cwd }) });
      // Drained always (a full pipe would stall the server); the end of it goes into error messages.
      transport.stderr?.on("data", (chunk: Buffer) => void (stderr.tail = (stderr.tail + chunk.toString()).slice(-4 * STDERR_TAIL_CHARS)));
    } else {
      const headers = Object.fromEntries(Object.entries(config.headers_env).map(([header, variable]) => {
        const value = env[variable];
        if (value === undefined) throw new HermesError(ErrorCode.INVALID_REQUEST, `MCP server '${name}': headers_env.${header} names $${variable}, which is not set`, { server: name, reason: `$${variable} is not set` });
        secrets.push(value, ...value.split(/\s+/).slice(1)); // "Bearer <token>": the token alone too
        return [header, value];
      }));
      const url = new URL(config.url);
      // The query; the password, or a username without one (a token in that place).
      secrets.push(url.search.slice(1), url.password || url.username);
      transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
    }
    const scrubSecrets = scrubberOf(secrets);
    // The URL itself, as written or as parsed, is shown redacted; then what else is secret goes.
    const urls = config.kind === "http" ? [...new Set([config.url, new URL(config.url).href])].sort((a, b) => b.length - a.length) : [];
    const scrub = (text: string) => scrubSecrets(urls.reduce((out, url) => out.split(url).join(shownUrl), text));
    const tailOfStderr = (prefix: string, suffix = "") => {
      const tail = tailOf(scrub(stderr.tail));
      return tail ? `${prefix}${tail}${suffix}` : "";
    };
    const timeout = options.startTimeoutMs ?? 30_000;
    // `auto`: probe for 2026-07-28 (`server/discover`), else the 2025 `initialize` handshake. On
    // stdio a silent probe means a 2025 server, so waiting the whole start deadline for it is waste.
    const probe = { timeoutMs: config.kind === "stdio" ? Math.min(timeout, 5000) : timeout };
    const client = new Client({ name: "hermes-mesh", version: VERSION }, { versionNegotiation: { mode: "auto", probe } });
    const connection = new McpServerConnection(name, client, () => ("pid" in transport ? (transport.pid ?? undefined) : undefined), where, scrub);
    try {
      await client.connect(transport, { timeout });
      const { tools } = await client.listTools(undefined, { timeout });
      connection.remoteTools.push(...(tools as RemoteTool[]));
    } catch (error) {
      await client.close().catch(() => {});
      const code = (error as { code?: unknown })?.code;
      const reason = code === "REQUEST_TIMEOUT"
        ? `no answer within ${timeout} ms`
        : code === "CONNECTION_CLOSED" && config.kind === "stdio" ? "the process exited before the MCP handshake completed" : scrub(messageOf(error));
      throw new HermesError(ErrorCode.UNAVAILABLE, `MCP server '${name}' (${where}) could not be ${config.kind === "stdio" ? "started" : "reached"}: ${reason}${tailOfStderr("; its stderr ended with: ")}`, {
        server: name,
        ...(config.kind === "stdio" ? { command: config.command } : { url: shownUrl }),
        reason,
      }, { cause: error });
    }
    client.onclose = () => {
      connection.#gone = `MCP server '${name}' (${where}) closed the connection${tailOfStderr(" (its stderr ended with: ", ")")}`;
      live.delete(connection);
      if (!connection.#closing) options.log?.warn(connection.#gone, { server: name });
    };
    client.onerror = (error) => options.log?.warn(`MCP server '${name}': ${scrub(messageOf(error))}`, { server: name });
    live.add(connection);
    if (!exitHook) {
      exitHook = true;
      process.once("exit", () => live.forEach((c) => c.#kill()));
    }
    options.log?.info(`MCP server '${name}' connected (${where})`, { server: name, protocol_version: client.getNegotiatedProtocolVersion(), tools: connection.remoteTools.length });
    return connection;
  }

  get protocolVersion(): string | undefined {
    return this.#client.getNegotiatedProtocolVersion();
  }

  get pid(): number | undefined {
    return this.#pid();
  }

  /** Calls a remote tool with the call's deadline, signal and progress; failures are HermesErrors. */
  async call(tool: string, args: Record<string, unknown>, ctx: ToolContext): Promise<unknown> {
    const at = { server: this.name, tool };
    if (this.#gone) throw new HermesError(ErrorCode.UNAVAILABLE, this.#gone, { ...at, reason: "the MCP server is gone" });
    const timeoutMs = ctx.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    let result;
    try {
      result = await this.#client.callTool({ name: tool, arguments: args }, {
        signal: ctx.signal,
        // The registry holds the deadline; the client's own (60 s by default) must not be shorter.
        timeout: timeoutMs,
        maxTotalTimeout: timeoutMs,
        // Also what asks the server for progress (a progressToken is sent only with a callback).
        onprogress: ({ progress, total, message }) => ctx.onProgress?.({ progress, ...(total !== undefined && { total }), ...(message !== undefined && { message }) }),
      });
    } catch (error) {
      throw this.#failure(error, tool, ctx, timeoutMs);
    }
    if (result.isError) {
      const payload = hermesPayload(result.structuredContent) ?? hermesPayload((result._meta as Record<string, unknown> | undefined)?.["hermes-mesh/error"]);
      if (payload) throw withPlace(HermesError.fromWire(payload), at);
      const text = textOf(result.content) ?? "(no text)";
      throw new HermesError(ErrorCode.INTERNAL, `MCP tool '${tool}' of server '${this.name}' failed: ${text.length > 2000 ? `${text.slice(0, 2000)}...` : text}`, { ...at, reason: "the tool answered isError" });
    }
    return result.structuredContent ?? textOf(result.content) ?? result.content;
  }

  #failure(error: unknown, tool: string, ctx: ToolContext, timeoutMs: number): HermesError {
    const at = { server: this.name, tool };
    const message = this.#scrub(messageOf(error));
    if (ctx.signal.aborted) {
      return ctx.signal.reason instanceof HermesError
        ? ctx.signal.reason
        : new HermesError(ErrorCode.TASK_TIMEOUT, `MCP tool '${tool}' of server '${this.name}' was cancelled`, { ...at, reason: "cancelled by the caller" });
    }
    if (error instanceof HermesError) return error;
    const code = (error as { code?: unknown })?.code;
    if (code === "REQUEST_TIMEOUT") return new HermesError(ErrorCode.TASK_TIMEOUT, `MCP tool '${tool}' of server '${this.name}' did not answer within ${timeoutMs} ms`, { ...at, timeout_ms: timeoutMs });
    const status = (error as { data?: { status?: unknown } })?.data?.status;
    if (typeof status === "number") {
      const hermes = status === 401 || status === 403 ? ErrorCode.AUTH_FAILED : status === 429 ? ErrorCode.RATE_LIMIT_EXCEEDED : ErrorCode.UNAVAILABLE;
      return new HermesError(hermes, `MCP server '${this.name}' (${this.#where}) answered HTTP ${status}: ${message}`, { ...at, http_status: status }, { cause: error });
    }
    if (this.#gone || isConnectionLoss(code, error)) {
      const detail = this.#gone ?? `MCP server '${this.name}' (${this.#where}) cannot be reached: ${message}`;
      return new HermesError(ErrorCode.UNAVAILABLE, detail, { ...at, reason: message }, { cause: error });
    }
    if (typeof code === "number") {
      // A JSON-RPC error: the server's Hermes code when its data is a Hermes error payload.
      const payload = hermesPayload((error as { data?: unknown }).data);
      if (payload) return withPlace(HermesError.fromWire(payload), at);
      return new HermesError(ErrorCode.INTERNAL, `MCP tool '${tool}' of server '${this.name}' failed: ${message}`, { ...at, mcp_error_code: code }, { cause: error });
    }
    return new HermesError(ErrorCode.INTERNAL, `MCP tool '${tool}' of server '${this.name}' failed: ${message}`, at, { cause: error });
  }

  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    live.delete(this);
    await this.#client.close().catch(() => {});
  }

  /** Synchronous last resort at process exit: the stdio child must not outlive the agent. */
  #kill(): void {
    const pid = this.pid;
    if (pid === undefined) return;
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** `${NAME}` in a stdio env value from the agent's environment; an unset one is an error. What came from the environment is added to `secrets`. */
function expand(value: string, env: Record<string, string | undefined>, field: string, secrets: string[]): string {
  let expanded = false;
  const result = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
    const found = env[variable];
    if (found === undefined) throw new HermesError(ErrorCode.INVALID_REQUEST, `mcp_servers.${field} uses \${${variable}}, which is not set`, { reason: `$${variable} is not set` });
    expanded = true;
    secrets.push(found);
    return found;
  });
  if (expanded) secrets.push(result);
  return result;
}

/**
 * A URL as errors and logs show it: no credentials, no query (a token often rides there), no fragment.
 * `http://user:pw@host:8931/mcp?key=k` -> `http://<credentials>@host:8931/mcp?<redacted>`.
 */
function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    return `${url.protocol}//${url.username || url.password ? "<credentials>@" : ""}${url.host}${url.pathname}${url.search ? "?<redacted>" : ""}`;
  } catch {
    return "<a URL that cannot be read>";
  }
}

/** Replaces each secret (the longest first; none shorter than 4 characters, which would hit ordinary words) by `<redacted>`. */
function scrubberOf(secrets: readonly string[]): (text: string) => string {
  const found = [...new Set(secrets.filter((s) => s.length >= 4))].sort((a, b) => b.length - a.length);
  return (text) => found.reduce((out, secret) => out.split(secret).join("<redacted>"), text);
}

/** The end of a stderr text, fit for an error message: its last lines, capped, without terminal escapes or control characters. */
function tailOf(text: string): string {
  const lines = text.replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, "").replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "").split("\n").map((l) => l.trimEnd()).filter(Boolean);
  let tail = lines.slice(-STDERR_TAIL_LINES).join("\n");
  const cut = lines.length > STDERR_TAIL_LINES || tail.length > STDERR_TAIL_CHARS;
  if (tail.length > STDERR_TAIL_CHARS) tail = tail.slice(-STDERR_TAIL_CHARS);
  return cut ? `...${tail.trimStart()}` : tail;
}

/** The SDK's lost-connection errors, and the system errors of a dead peer (ECONNRESET, EPIPE, ...). */
function isConnectionLoss(code: unknown, error: unknown): boolean {
  if (code === "CONNECTION_CLOSED" || code === "NOT_CONNECTED" || code === "SEND_FAILED" || code === "CLIENT_HTTP_FAILED_TO_OPEN_STREAM") return true;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return true;
  return /not connected|connection closed/i.test(messageOf(error));
}

/** An error payload carrying a Hermes code (not 0). */
function hermesPayload(value: unknown): Record<string, unknown> | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const code = (value as { error_code?: unknown }).error_code;
  return isErrorCode(code) && code !== ErrorCode.SUCCESS ? (value as Record<string, unknown>) : undefined;
}

function withPlace(error: HermesError, at: { server: string; tool: string }): HermesError {
  return new HermesError(error.code, error.message, { ...error.fields, ...at });
}

/** The text blocks of a result, joined; undefined when there are none. */
function textOf(content: unknown): string | undefined {
  if (!Array.isArray(content)) return undefined;
  const texts = content.filter((c) => c?.type === "text" && typeof c.text === "string").map((c) => c.text as string);
  return texts.length > 0 ? texts.join("\n") : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
