import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseDocument } from "yaml";
import { z } from "zod";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { MCP_SERVER_NAME, McpServerConfigSchema, mcpServersUsed } from "./mcp-tools.ts";

/** One agent of an agents file: who it is, how it thinks, what it may use. */
export const AgentConfigSchema = z.strictObject({
  name: z.string().regex(/^[a-z][a-z0-9_-]*$/, "a name matching [a-z][a-z0-9_-]*"),
  capabilities: z.array(z.string()).default([]),
  system_prompt: z.string().min(1),
  /** Model name sent to the provider (e.g. gpt-4o-mini), or a script name for the scripted provider. */
  model: z.string().min(1),
  temperature: z.number().min(0).max(2).default(0.2),
  /** Tools the agent may call (names in the tool registry, `mcp.<server>.<tool>`, or `mcp.<server>.*` for all of a server's); anything else is refused. */
  tools: z.array(z.string()).default([]),
  /** Steps (model calls) before the loop gives up. */
  max_steps: z.int().min(1).max(50).default(8),
  /** Short-term memory per context: messages kept, and how many stay verbatim after a summary. */
  memory: z.strictObject({ limit: z.int().min(4).max(1000).default(50), keep: z.int().min(1).max(500).default(20) }).prefault({}),
  /** Long-term facts recalled into the prompt (namespace; 0 to recall none). */
  recall: z.strictObject({ namespace: z.string().min(1).optional(), limit: z.int().min(0).max(50).default(3) }).prefault({}),
});
export type AgentConfig = z.output<typeof AgentConfigSchema>;

/** An agents file: the provider and its settings, and the agents. */
export const AgentsFileSchema = z.strictObject({
  provider: z.strictObject({
    /** `scripted` runs offline from `script`; `openai` calls an OpenAI-compatible endpoint. */
    kind: z.enum(["scripted", "openai"]).default("scripted"),
    /** Scripted provider: the script file (relative to the agents file). */
    script: z.string().optional(),
    /** OpenAI provider: base URL (default $OPENAI_BASE_URL), the env var holding the key (default OPENAI_API_KEY), timeout. */
    base_url: z.string().url().optional(),
    api_key_env: z.string().default("OPENAI_API_KEY"),
    timeout_ms: z.int().min(100).default(60_000),
    /** Scripted provider: milliseconds each model call takes (simulated latency for demos and load tests). */
    latency_ms: z.int().min(0).max(600_000).default(0),
  }).prefault({}),
  /** Directory the file tools may touch: relative to the agents file, or under the running mesh's directory with `{mesh}/...`. */
  sandbox: z.string().default("{mesh}/sandbox"),
  /** Origins the http_fetch tool may reach. */
  http_allow: z.array(z.string()).default([]),
  /** External MCP servers whose tools agents may use as `mcp.<server>.<tool>` (src/agent/mcp-tools.ts). */
  mcp_servers: z
    .record(z.string().regex(MCP_SERVER_NAME), McpServerConfigSchema, { error: (issue) => (issue.code === "invalid_key" ? "a server name matching [a-z][a-z0-9_-]*" : undefined) })
    .default({}),
  agents: z.array(AgentConfigSchema).min(1),
});
export type AgentsFile = z.output<typeof AgentsFileSchema> & { path: string };

/**
 * Reads and checks an agents file (YAML). Errors are HermesError code 2 naming the file, line
 * and field: `agents.yaml:7:5: agents[1].temperature: expected a number from 0 to 2`.
 *
 * @example
 * const file = loadAgentsFile("actors/agents.yaml");
 * const coder = agentByName(file, "coder");
 */
export function loadAgentsFile(path: string): AgentsFile {
  const absolute = resolve(path);
  let text: string;
  try {
    text = readFileSync(absolute, "utf8");
  } catch (error) {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `cannot read agents file ${absolute}: ${(error as Error).message}`, { reason: "unreadable", expected: "a YAML agents file" });
  }
  const document = parseDocument(text, { prettyErrors: false });
  if (document.errors.length > 0) {
    const e = document.errors[0]!;
    throw new HermesError(ErrorCode.INVALID_REQUEST, `${absolute}:${e.linePos?.[0]?.line ?? 0}:${e.linePos?.[0]?.col ?? 0}: ${e.message}`, { reason: e.message, expected: "valid YAML" });
  }
  const result = AgentsFileSchema.safeParse(document.toJS());
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const node = document.getIn(issue.path as Array<string | number>, true) as { range?: [number, number] } | undefined;
      const at = node?.range ? lineCol(text, node.range[0]) : "1:1";
      return `${absolute}:${at}: ${issue.path.join(".") || "(file)"}: ${issue.message}`;
    });
    throw new HermesError(ErrorCode.INVALID_REQUEST, lines.join("\n"), { reason: lines[0], expected: "an agents file (docs/agents.md)" });
  }
  const names = new Set<string>();
  for (const [index, agent] of result.data.agents.entries()) {
    if (names.has(agent.name)) throw new HermesError(ErrorCode.INVALID_REQUEST, `${absolute}: agent '${agent.name}' is defined twice`, { reason: "duplicate agent" });
    names.add(agent.name);
    const servers = Object.keys(result.data.mcp_servers);
    for (const server of mcpServersUsed(agent.tools).filter((s) => !servers.includes(s))) {
      const at = agent.tools.findIndex((t) => t.startsWith(`mcp.${server}.`));
      const node = document.getIn(["agents", index, "tools", at], true) as { range?: [number, number] } | undefined;
      const reason = `'${agent.tools[at]}' names MCP server '${server}', which mcp_servers does not define (defined: ${servers.join(", ") || "none"})`;
      throw new HermesError(ErrorCode.INVALID_REQUEST, `${absolute}:${node?.range ? lineCol(text, node.range[0]) : "1:1"}: agents.${index}.tools.${at}: ${reason}`, { reason, expected: "a server of mcp_servers" });
    }
  }
  const base = dirname(absolute);
  return {
    ...result.data,
    path: absolute,
    sandbox: result.data.sandbox.startsWith("{mesh}")
      ? join(process.env.HERMES_MESH_DIR ?? tmpdir(), result.data.sandbox.slice("{mesh}".length))
      : resolve(base, result.data.sandbox),
    provider: { ...result.data.provider, ...(result.data.provider.script && { script: resolve(base, result.data.provider.script) }) },
    // stdio servers run in (and resolve relative paths from) the agents file's directory unless told otherwise.
    mcp_servers: Object.fromEntries(Object.entries(result.data.mcp_servers).map(([name, server]) => [name, server.kind === "stdio" ? { ...server, cwd: resolve(base, server.cwd ?? ".") } : server])),
  };
}

/**
 * What every answer of agents on the scripted provider says about itself: that it is scripted
 * (the same replies whatever is asked), and which settings point the agents at a real
 * OpenAI-compatible endpoint instead. Why: a new user asking the demo pipeline for something
 * else would otherwise get the script's unrelated answer with no hint why.
 *
 * @example
 * scriptedProviderNotice(loadAgentsFile("actors/agents.yaml"));
 * // "Scripted answer, not about your request: ... set provider.kind: openai and provider.base_url ..."
 */
export function scriptedProviderNotice(file: Pick<AgentsFile, "path" | "provider">): string {
  const script = file.provider.script ? `, replaying ${file.provider.script}` : "";
  return [
    `Scripted answer, not about your request: these agents run on the scripted provider (provider.kind: scripted in ${file.path}${script}),`,
    "which gives the same replies whatever is asked.",
    `To use a real model, set in ${file.path}: provider.kind: openai, and provider.base_url: an OpenAI-compatible endpoint,`,
    "e.g. http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8080/v1 (llama.cpp server) (without base_url: $OPENAI_BASE_URL, else https://api.openai.com/v1);",
    `its API key goes in $${file.provider.api_key_env} (provider.api_key_env names the variable; local servers need none);`,
    "and set each agent's model: to a model that server serves.",
    "Or point HERMES_AGENTS_FILE at an agents file of your own. Then restart the mesh.",
  ].join(" ");
}

/** The agent named `name`; code 8 listing the known ones when there is none. */
export function agentByName(file: AgentsFile, name: string): AgentConfig {
  const agent = file.agents.find((a) => a.name === name);
  if (!agent) throw new HermesError(ErrorCode.UNROUTABLE, `${file.path} defines no agent '${name}'`, { target: name, known: file.agents.map((a) => a.name) });
  return agent;
}

function lineCol(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return `${line}:${offset - before.lastIndexOf("\n")}`;
}
