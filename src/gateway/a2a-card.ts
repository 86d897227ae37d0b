/**
 * The gateway's A2A agent card (docs/interop.md): one skill per actor capability of the
 * registry, built on each request, in the A2A 1.0 JSON form or the 0.3 one. Plain JSON, no
 * SDK: serving the card never loads `@a2a-js/sdk`.
 */
import type { Registry } from "../../mesh/registry.ts";

/** A capability of the mesh as an A2A skill: what the registry says of it, and who serves it. */
export interface Skill {
  /** The capability, e.g. "calculator": the skill id, and what a task is routed by. */
  id: string;
  description?: string;
  /** JSON Schema of the request payload (`defineActor({ capabilityInfo })`). */
  inputSchema?: Record<string, unknown>;
  /** Names of the actors that declare it. */
  actors: string[];
}

/** What the card says about where and how it is reached. */
export interface CardSettings {
  /** The JSON-RPC endpoint, absolute: `http://127.0.0.1:8000/a2a`. */
  url: string;
  meshName: string;
  version: string;
  /** The gateway wants `Authorization: Bearer <token>` (the card then names the scheme). */
  bearer: boolean;
}

/** The protocol versions the endpoint speaks, on the JSON-RPC binding. */
export const A2A_VERSIONS = { current: "1.0", legacy: "0.3" } as const;
/** The path of the card (A2A 0.3 and later; `agent.json` was before). */
export const AGENT_CARD_PATH = "/.well-known/agent-card.json";
/** Where the message names its skill: `message.metadata.skill` (or the request's `metadata.skill`). */
export const SKILL_KEY = "skill";

const INPUT_MODES = ["text/plain", "application/json"];
const OUTPUT_MODES = ["application/json", "text/plain"];

/**
 * Every capability declared by an actor of the mesh (clients and the gateway declare none), by
 * id, with the first description and input schema any of its actors gave.
 *
 * @example
 * skillsOf(registry); // [{ id: "calculator", description: "Evaluates ...", inputSchema: {...}, actors: ["calculator"] }, ...]
 */
export function skillsOf(registry: Registry): Skill[] {
  const byId = new Map<string, Skill>();
  for (const entry of registry.snapshot()) {
    if (entry.kind === "client") continue;
    for (const id of entry.capabilities) {
      let skill = byId.get(id);
      if (!skill) byId.set(id, (skill = { id, actors: [] }));
      const info = entry.capabilityInfo?.[id];
      if (skill.description === undefined && info?.description !== undefined) skill.description = info.description;
      if (skill.inputSchema === undefined && info?.inputSchema !== undefined) skill.inputSchema = info.inputSchema;
      if (!skill.actors.includes(entry.name)) skill.actors.push(entry.name);
    }
  }
  return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * The one property a plain-text message fills: the schema's only required property, when it
 * is a string. Undefined when there is none (the text then goes as `{ text }`).
 *
 * @example
 * textProperty({ type: "object", properties: { expression: { type: "string" } }, required: ["expression"] }); // "expression"
 */
export function textProperty(schema: Record<string, unknown> | undefined): string | undefined {
  const required = schema?.required;
  if (!Array.isArray(required) || required.length !== 1 || typeof required[0] !== "string") return undefined;
  const properties = schema!.properties as Record<string, { type?: unknown }> | undefined;
  return properties?.[required[0]]?.type === "string" ? required[0] : undefined;
}

/**
 * The card in the A2A 1.0 JSON form (what `AgentCard.toJSON` of the SDK gives): both protocol
 * versions on one JSON-RPC interface, streaming, and the bearer scheme when a token is set.
 *
 * @example
 * agentCard(skillsOf(registry), { url: "http://127.0.0.1:8000/a2a", meshName: "demo", version: "0.4.0", bearer: false });
 * // { name: "hermes-mesh demo", supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0" }, ...], skills: [...] }
 */
export function agentCard(skills: readonly Skill[], settings: CardSettings): Record<string, unknown> {
  const card: Record<string, unknown> = {
    name: `hermes-mesh ${settings.meshName}`,
    description: describeMesh(settings.meshName, skills),
    supportedInterfaces: interfaces(settings.url),
    version: settings.version,
    capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
    defaultInputModes: INPUT_MODES,
    defaultOutputModes: OUTPUT_MODES,
    skills: skills.map(skillOnCard),
  };
  if (settings.bearer) {
    card.securitySchemes = { bearer: { httpAuthSecurityScheme: { scheme: "Bearer", description: BEARER_HINT } } };
    card.securityRequirements = [{ schemes: { bearer: { list: [] } } }];
  }
  return card;
}

/**
 * The card in the A2A 0.3 JSON form, for clients that ask without `A2A-Version` (or with 0.3):
 * `url`, `protocolVersion` and `preferredTransport` at the top, security in the 0.3 shape, and
 * the 1.0 interfaces embedded so a 1.0 client reading it still finds them.
 *
 * @example
 * legacyAgentCard(skills, settings).protocolVersion; // "0.3.0"
 */
export function legacyAgentCard(skills: readonly Skill[], settings: CardSettings): Record<string, unknown> {
  const card: Record<string, unknown> = {
    protocolVersion: `${A2A_VERSIONS.legacy}.0`,
    name: `hermes-mesh ${settings.meshName}`,
    description: describeMesh(settings.meshName, skills),
    url: settings.url,
    preferredTransport: "JSONRPC",
    version: settings.version,
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: INPUT_MODES,
    defaultOutputModes: OUTPUT_MODES,
    skills: skills.map(skillOnCard),
    supportedInterfaces: interfaces(settings.url),
  };
  if (settings.bearer) {
    card.securitySchemes = { bearer: { type: "http", scheme: "bearer", description: BEARER_HINT } };
    card.security = [{ bearer: [] }];
  }
  return card;
}

const BEARER_HINT = "The gateway's token (HERMES_GATEWAY_TOKEN, or the variable gateway.token_env names where the mesh runs).";

function interfaces(url: string): Array<Record<string, string>> {
  return [
    { url, protocolBinding: "JSONRPC", protocolVersion: A2A_VERSIONS.current },
    { url, protocolBinding: "JSONRPC", protocolVersion: A2A_VERSIONS.legacy },
  ];
}

function describeMesh(meshName: string, skills: readonly Skill[]): string {
  const which = skills.length === 1 ? `Its one skill, '${skills[0]!.id}', is chosen by default` : `Name the skill in message.metadata.${SKILL_KEY}`;
  return `The actors of the hermes-mesh mesh '${meshName}': each capability is a skill. ${which}; a data part is the request payload, a text part fills the skill's one required string field (else { text }).`;
}

function describeSkill(skill: Skill): string {
  return skill.description ?? `The capability '${skill.id}' of the actor${skill.actors.length === 1 ? "" : "s"} ${skill.actors.join(", ")}.`;
}

function tagsOf(skill: Skill): string[] {
  return ["hermes-mesh", ...skill.actors.map((name) => `actor:${name}`)];
}

/**
 * Text is offered where it can make a valid payload: the schema's one required string, or
 * `{ text }` where nothing is required and other properties are allowed (or there is no schema).
 */
function inputModesOf(skill: Skill): string[] {
  const schema = skill.inputSchema;
  const required = Array.isArray(schema?.required) ? schema.required.length : 0;
  const text = schema === undefined || textProperty(schema) !== undefined || (required === 0 && schema.additionalProperties !== false);
  return text ? INPUT_MODES : ["application/json"];
}

/** A skill as both card forms list it. */
function skillOnCard(skill: Skill): Record<string, unknown> {
  return { id: skill.id, name: skill.id, description: describeSkill(skill), tags: tagsOf(skill), inputModes: inputModesOf(skill), outputModes: OUTPUT_MODES };
}
