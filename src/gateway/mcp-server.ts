/**
 * The mesh's tools as an MCP server (docs/interop.md, "MCP"): every actor capability whose
 * registry entry declares an input schema is a tool of that name, and a call is a Hermes
 * request by capability with the arguments as payload. Values JSON has no type for travel in the
 * gateway's JSON forms (invoke-forms.ts: `$bigint`, `$bin`, `$entries`, `$timestamp`, `$ext`), as
 * over `POST /hermes/v1/invoke`: read from the arguments, written into results, errors and
 * progress (the agent layer's tools get their arguments as sent). An embedding program may add
 * the agent layer's tools (a ToolRegistry of defineTool tools). Built on the official SDK's
 * low-level `Server`, one instance per HTTP request or stdio connection, so the list is read from
 * the registry at every `tools/list` and follows it.
 */
import { z } from "zod";
import {
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type CallToolRequest,
  type CallToolResult,
  type ServerContext,
  type Tool,
} from "@modelcontextprotocol/server";
import type { Envelope, Payload, Route } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { newMessageId } from "../../mesh/ids.ts";
import type { Registry, RegistryUpdate } from "../../mesh/registry.ts";
import type { RequestOptions } from "../../mesh/requests.ts";
import { TOOL_NAME_PATTERN } from "../agent/tool-definition.ts";
import type { ToolRegistry } from "../agent/tool-registry.ts";
import { VERSION } from "../version.ts";
import { payloadFromJson, payloadToJson } from "./invoke-forms.ts";

/** Deadline of one call when neither the request's `_meta` nor the options say otherwise. */
export const DEFAULT_MCP_TIMEOUT_MS = 60_000;
/**
 * Over stdio, how long after its last progress notification was written a result waits at least
 * (see runCall). A heuristic, not a guarantee: nothing in MCP acknowledges a notification, and a
 * ping round trip (which would) is no longer a server's to send in revision 2026-07-28.
 * test/cli/mcp.test.ts ("answered at once after its progress") fails without it, on both clients,
 * and failed once at 20 ms in a full run of the suite on a loaded 2-core machine, where the
 * client did not read for longer than that.
 */
const PROGRESS_GAP_MS = 50;
/** The `_meta` key by which a client sets one call's deadline, in ms (bounded by `maxTimeoutMs`). */
export const TIMEOUT_META_KEY = "hermes-mesh/timeout_ms";

/** What the server needs of the mesh: a member's requests (the gateway's MeshNode, or a connectMesh client). */
export interface McpMesh {
  request(route: Route, payload: Payload, options?: RequestOptions): Promise<Envelope>;
}

/** How {@link createMcpServer} serves. */
export interface McpServerOptions {
  /** The registry whose capabilities are the tools (a member's view of it). */
  registry: Registry;
  /** Where calls go. */
  mesh: McpMesh;
  /** The mesh's name, for the server's instructions. */
  meshName?: string;
  /**
   * More tools (defineTool tools, such as the built-ins). Opt-in: nothing serves file or shell
   * tools unless the embedding program passes them. A tool of this registry hides a capability
   * of the same name.
   */
  tools?: ToolRegistry;
  /** Deadline of a call, ms. Default 60 s; past it the call answers code 3. */
  timeoutMs?: number;
  /** The longest deadline a client may ask for with `_meta["hermes-mesh/timeout_ms"]`. Default 10 min. */
  maxTimeoutMs?: number;
}

/** The MCP server of a mesh: builds SDK servers on demand and tells when the tool list changed. */
export interface MeshMcpServer {
  /** A fresh SDK server (an McpServerFactory for createMcpHandler and serveStdio). */
  server(): Server;
  /** The tools as `tools/list` shows them now, sorted by name. */
  list(): Tool[];
  /** Calls `listener` whenever the list changes (a capability appears or goes); returns the function that stops it. */
  onToolsChanged(listener: () => void): () => void;
  /** Stops following the registry. */
  close(): void;
}

/** A tool as served: where its calls go. */
type Served = { tool: Tool; call: (args: Record<string, unknown>, call: CallScope) => Promise<CallToolResult> };
/** What one call runs under. */
interface CallScope {
  signal: AbortSignal;
  timeoutMs: number;
  /** Reports progress when the client asked for it (sent a progressToken). */
  progress(update: { progress?: unknown; total?: unknown; message?: unknown }): void;
}

/**
 * Builds the mesh's MCP server. The SDK's serving entries take `server` as their factory.
 *
 * @example
 * const mcp = createMcpServer({ registry: mesh.registry, mesh, meshName: "demo", tools: new ToolRegistry([calculatorTool()]) });
 * const http = createMcpHandler(() => mcp.server());           // @modelcontextprotocol/server
 * mcp.onToolsChanged(() => http.notify.toolsChanged());
 * // or over stdio: serveStdio(() => mcp.server());            // @modelcontextprotocol/server/stdio
 */
export function createMcpServer(options: McpServerOptions): MeshMcpServer {
  const timeoutMs = options.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
  const maxTimeoutMs = Math.max(options.maxTimeoutMs ?? 600_000, timeoutMs);
  const listeners = new Set<() => void>();
  const validators = new Map<string, z.ZodType | null>();

  const catalog = (): Map<string, Served> => {
    const served = new Map<string, Served>();
    for (const entry of options.registry.snapshot()) {
      if (entry.kind === "client") continue;
      for (const capability of entry.capabilities) {
        const info = entry.capabilityInfo?.[capability];
        const schema = info?.inputSchema;
        if (!schema || served.has(capability) || !TOOL_NAME_PATTERN.test(capability)) continue;
        if (schema.type !== undefined && schema.type !== "object") continue; // a payload is a map
        const inputSchema = { ...schema, type: "object" } as Tool["inputSchema"];
        const description = info.description ?? `The mesh capability '${capability}' (actor ${entry.name}).`;
        served.set(capability, {
          tool: { name: capability, description, inputSchema },
          call: (args, scope) => callCapability(capability, inputSchema, args, scope),
        });
      }
    }
    for (const spec of options.tools?.list() ?? []) {
      served.set(spec.name, {
        tool: { name: spec.name, description: spec.description, inputSchema: { ...spec.parameters, type: "object" } as Tool["inputSchema"] },
        call: (args, scope) => callLocalTool(spec.name, args, scope),
      });
    }
    return new Map([...served].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  };

  const callCapability = async (capability: string, schema: Tool["inputSchema"], args: Record<string, unknown>, scope: CallScope): Promise<CallToolResult> => {
    checkArguments(capability, schema, args);
    // The schema describes the JSON; the actor gets the values of its JSON forms ($bigint, $bin, ...), as over POST /hermes/v1/invoke.
    const payload = payloadFromJson(args, "arguments") as Payload;
    const reply = await options.mesh.request({ capability }, payload, {
      timeoutMs: scope.timeoutMs,
      signal: scope.signal,
      onProgress: (payload) => scope.progress(payload),
    });
    return success(reply.payload);
  };

  const callLocalTool = async (name: string, args: Record<string, unknown>, scope: CallScope): Promise<CallToolResult> => {
    const result = await options.tools!.call(name, args, {
      trace_id: newMessageId(),
      signal: scope.signal,
      timeoutMs: scope.timeoutMs,
      onProgress: (update) => scope.progress(update),
    });
    if (!result.ok) throw HermesError.fromWire(result.error);
    return success(result.value);
  };

  // The actor checks its payload too; checking here answers a malformed call without a round trip.
  const checkArguments = (name: string, schema: Tool["inputSchema"], args: Record<string, unknown>): void => {
    const key = JSON.stringify(schema);
    let validator = validators.get(key);
    if (validator === undefined) {
      try {
        validator = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
      } catch {
        validator = null; // a schema zod cannot read: the actor alone judges
      }
      if (validators.size >= 256) validators.clear();
      validators.set(key, validator);
    }
    const checked = validator?.safeParse(args);
    if (checked && !checked.success) {
      const reason = checked.error.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; ");
      throw new HermesError(ErrorCode.INVALID_REQUEST, `invalid arguments for tool '${name}': ${reason}`, { reason, expected: "arguments matching the tool's inputSchema (tools/list)" });
    }
  };

  const build = (): Server => {
    const server = new Server(
      { name: "hermes-mesh", version: VERSION },
      {
        capabilities: { tools: { listChanged: true } },
        instructions: `The tools of the hermes-mesh mesh${options.meshName ? ` '${options.meshName}'` : ""}: each is an actor capability (a request to it) or a tool of the program serving. A failed call is an isError result whose structuredContent is the Hermes error (error_code, error_name, detail). Values JSON has no type for are objects with one key, in arguments and results: {"$bigint": "<decimal>"}, {"$bin": "<base64>"}, {"$entries": [[key, value], ...]}, {"$timestamp": {...}}, {"$ext": {...}}.`,
      },
    );
    server.setRequestHandler("tools/list", () => ({ tools: [...catalog().values()].map((s) => s.tool) }));
    server.setRequestHandler("tools/call", async (request, ctx) => {
      const tools = catalog();
      const name = request.params.name;
      const served = tools.get(name);
      if (!served) {
        const known = [...tools.keys()];
        const error = new HermesError(ErrorCode.TOOL_NOT_FOUND, `unknown tool '${name}'; the known tools are: ${known.join(", ") || "(none)"}`, { requested_tool: name, available_tools: known });
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message, error.toPayload());
      }
      return server.projectCallToolResult(await runCall(served, request, ctx, deadlineOf(request)), undefined);
    });
    return server;
  };

  const deadlineOf = (request: CallToolRequest): number => {
    const asked = request.params._meta?.[TIMEOUT_META_KEY];
    return typeof asked === "number" && Number.isFinite(asked) && asked > 0 ? Math.min(asked, maxTimeoutMs) : timeoutMs;
  };

  // Only a change of what a capability is (not of load or health) can change the list.
  let signature = JSON.stringify(catalogTools(catalog()));
  const stop = options.registry.onUpdate((update: RegistryUpdate) => {
    if (update.type === "patch" && !("capabilities" in update.changes || "capabilityInfo" in update.changes || "kind" in update.changes)) return;
    const next = JSON.stringify(catalogTools(catalog()));
    if (next === signature) return;
    signature = next;
    for (const listener of [...listeners]) {
      try {
        listener();
      } catch {
        // one failing transport must not keep the news from the others
      }
    }
  });

  return {
    server: build,
    list: () => catalogTools(catalog()),
    onToolsChanged(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close() {
      stop();
      listeners.clear();
    },
  };
}

function catalogTools(catalog: Map<string, Served>): Tool[] {
  return [...catalog.values()].map((s) => s.tool);
}

/**
 * Runs one call: its signal aborts when the client cancels (notifications/cancelled, or the
 * HTTP request going away), progress goes out as notifications/progress when the client sent
 * a progressToken, and a failure becomes an isError result that keeps the Hermes code.
 */
async function runCall(served: Served, request: CallToolRequest, ctx: ServerContext, timeoutMs: number): Promise<CallToolResult> {
  const signals = [ctx.mcpReq.signal, ctx.http?.req?.signal].filter((s): s is AbortSignal => s !== undefined);
  const token = request.params._meta?.progressToken;
  // Notifications go out in order and before the result.
  let notified: Promise<void> = Promise.resolve();
  let last = 0;
  let lastSentAt = 0;
  const progress: CallScope["progress"] = (update) => {
    if (token === undefined) return;
    // Called from the mesh link's receive path (or a tool's run): nothing may throw back into it.
    try {
      const message = typeof update.message === "string" ? update.message : JSON.stringify(payloadToJson(update));
      last = typeof update.progress === "number" && update.progress > last ? update.progress : last + 1;
      const params = { progressToken: token, progress: last, ...(typeof update.total === "number" && { total: update.total }), message };
      notified = notified.then(() => ctx.mcpReq.notify({ method: "notifications/progress", params }).then(() => void (lastSentAt = performance.now()), () => {}));
    } catch {
      // a progress payload not even the JSON forms can carry (a cycle): that notification is dropped, the call goes on
    }
  };
  try {
    const args = request.params.arguments ?? {};
    return await served.call(args, { signal: signals.length === 1 ? signals[0]! : AbortSignal.any(signals), timeoutMs, progress });
  } catch (error) {
    return failure(HermesError.from(error));
  } finally {
    // Every notification has been handed to stdout (the transport's send resolved) before the result.
    await notified;
    // The SDK clients (v1 and v2 Protocol) handle a notification a microtask late but a response
    // at once: read from stdio in the same chunk, the response retires the progress token before
    // the notifications are seen, and they are dropped. Flushing them first is not enough (the
    // client decides when it reads), so a result that follows its last progress closely waits a
    // moment, to be read on its own. (Over HTTP each server-sent event is its own read: no wait.)
    const gap = lastSentAt + PROGRESS_GAP_MS - performance.now();
    if (last > 0 && !ctx.http && gap > 0) await new Promise<void>((resolve) => setTimeout(resolve, gap));
  }
}

/**
 * A successful answer: the payload in the gateway's JSON forms (payloadToJson: `$bigint`, `$bin`,
 * `$entries`, ...) as structured content (an object; anything else under `result`) and as text.
 */
function success(value: unknown): CallToolResult {
  const json = payloadToJson(value);
  const structured = typeof json === "object" && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : { result: json };
  return { content: [{ type: "text", text: typeof json === "string" ? json : (JSON.stringify(json) ?? "null") }], structuredContent: structured };
}

/** A failed call: the Hermes error payload as structured content, and `error <code> <NAME>: <detail>` as text. */
function failure(error: HermesError): CallToolResult {
  const fields = Object.keys(error.fields).length > 0 ? ` ${JSON.stringify(payloadToJson(error.fields))}` : "";
  return {
    isError: true,
    content: [{ type: "text", text: `error ${error.code} ${error.codeName}: ${error.message}${fields}` }],
    structuredContent: payloadToJson({ ...error.toPayload() }) as Record<string, unknown>,
  };
}
