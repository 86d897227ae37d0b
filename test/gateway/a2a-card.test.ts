/** The A2A agent card from the registry (src/gateway/a2a-card.ts), checked against the SDK's own reading of it. */
import { describe, expect, test } from "bun:test";
import { AgentCard } from "@a2a-js/sdk";
import { parseLegacyAgentCard } from "@a2a-js/sdk/compat/v0_3/client";
import { Registry, type RegistryEntry } from "../../mesh/registry.ts";
import { agentCard, legacyAgentCard, skillsOf, textProperty } from "../../src/gateway/a2a-card.ts";

function entry(name: string, instance: number, capabilities: string[], extra: Partial<RegistryEntry> = {}): RegistryEntry {
  const address = instance === 0 ? name : `${name}#${instance}`;
  return { name, instance, address, id: `${address}-id`, socket: `/tmp/${address}.sock`, capabilities, subscriptions: [], health: "healthy", restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 0, ...extra };
}

const SETTINGS = { url: "http://127.0.0.1:8000/a2a", meshName: "demo", version: "1.2.3", bearer: true };

describe("the agent card", () => {
  test("one skill per capability across instances, with the first description; clients are left out", () => {
    const registry = new Registry();
    registry.upsert(entry("calc", 0, ["calculator"], { capabilityInfo: { calculator: { description: "Adds things" } } }));
    registry.upsert(entry("calc", 1, ["calculator"]));
    registry.upsert(entry("other", 0, ["calculator", "ocr"]));
    registry.upsert(entry("gateway", 0, ["sneaky"], { kind: "client" }));
    expect(skillsOf(registry)).toEqual([
      { id: "calculator", description: "Adds things", actors: ["calc", "other"] },
      { id: "ocr", actors: ["other"] },
    ]);
  });

  test("the 1.0 form is what the SDK reads: interfaces for 1.0 and 0.3, streaming, the bearer scheme", () => {
    const skills = [{ id: "calculator", description: "Adds", actors: ["calc"], inputSchema: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] } }];
    const typed = AgentCard.fromJSON(agentCard(skills, SETTINGS));
    expect(typed.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion])).toEqual([[SETTINGS.url, "JSONRPC", "1.0"], [SETTINGS.url, "JSONRPC", "0.3"]]);
    expect(typed.capabilities?.streaming).toBe(true);
    expect(typed.securitySchemes.bearer?.scheme).toMatchObject({ $case: "httpAuthSecurityScheme", value: { scheme: "Bearer" } });
    expect(Object.keys(typed.securityRequirements[0]!.schemes)).toEqual(["bearer"]);
    expect(typed.skills[0]).toMatchObject({ id: "calculator", name: "calculator", description: "Adds", inputModes: ["text/plain", "application/json"] });
    expect(agentCard(skills, { ...SETTINGS, bearer: false }).securitySchemes).toBeUndefined();
  });

  test("the 0.3 form is what the SDK's 0.3 reader takes, and it still lists the 1.0 interfaces", () => {
    const card = legacyAgentCard([{ id: "echo", actors: ["echo"] }], SETTINGS);
    expect(card).toMatchObject({ protocolVersion: "0.3.0", url: SETTINGS.url, preferredTransport: "JSONRPC", security: [{ bearer: [] }] });
    const core = parseLegacyAgentCard(card);
    expect(core.skills.map((s) => s.id)).toEqual(["echo"]);
    expect(core.securitySchemes.bearer?.scheme?.$case).toBe("httpAuthSecurityScheme");
  });

  test("text is offered where it makes a payload: one required string, or nothing required", () => {
    expect(textProperty({ type: "object", properties: { expression: { type: "string" } }, required: ["expression"] })).toBe("expression");
    expect(textProperty({ type: "object", properties: { n: { type: "integer" } }, required: ["n"] })).toBeUndefined();
    expect(textProperty({ type: "object", properties: { a: { type: "string" }, b: { type: "string" } }, required: ["a", "b"] })).toBeUndefined();
    const modes = (inputSchema: Record<string, unknown>) => (agentCard([{ id: "s", actors: ["a"], inputSchema }], SETTINGS).skills as Array<{ inputModes: string[] }>)[0]!.inputModes;
    expect(modes({ type: "object", properties: { n: { type: "integer" } }, required: ["n"] })).toEqual(["application/json"]);
    expect(modes({ type: "object", properties: { n: { type: "integer" } } })).toEqual(["text/plain", "application/json"]);
    expect(modes({ type: "object", additionalProperties: false })).toEqual(["application/json"]);
  });
});
