/**
 * What an actor declares about its capabilities (description, payload schema) reaches the
 * registry of every member, bounded: the gateway publishes it as A2A skills and MCP tools.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { CAPABILITY_INFO_LIMITS, parseCapabilityInfo } from "../../mesh/registry.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { connectMesh } from "../../src/actor/connect-mesh.ts";
import { BUN, spawnWithOutput, waitFor } from "../helpers.ts";
import { FIXTURE_ACTORS, startTestMesh } from "../actor/mesh-harness.ts";

function refusal(value: unknown, capabilities: string[]): HermesError {
  try {
    parseCapabilityInfo(value, capabilities);
  } catch (error) {
    if (error instanceof HermesError) return error;
    throw error;
  }
  throw new Error(`accepted: ${Bun.inspect(value)}`);
}

describe("capability info", () => {
  test("kept as declared for capabilities the member serves", () => {
    const info = { calc: { description: "adds", inputSchema: { type: "object", properties: { a: { type: "number" } } } }, echo: {} };
    expect(parseCapabilityInfo(info, ["calc", "echo"])).toEqual(info);
    expect(parseCapabilityInfo(undefined, ["calc"])).toBeUndefined();
    expect(parseCapabilityInfo({}, ["calc"])).toBeUndefined();
  });

  test("refused with code 2 naming the place and the reason", () => {
    const cases: Array<[unknown, RegExp]> = [
      [[1], /capability_info: not a map/],
      [{ other: {} }, /capability_info\.other: 'other' is not one of the capabilities it serves \(calc\)/],
      [{ calc: "x" }, /capability_info\.calc: not a map/],
      [{ calc: { description: 3 } }, /capability_info\.calc\.description: not a string/],
      [{ calc: { description: "x".repeat(CAPABILITY_INFO_LIMITS.descriptionChars + 1) } }, /over 2000 characters/],
      [{ calc: { inputSchema: [] } }, /capability_info\.calc\.inputSchema: not a JSON Schema object/],
      [{ calc: { inputSchema: { enum: ["x".repeat(CAPABILITY_INFO_LIMITS.schemaBytes)] } } }, /over 32768 bytes as JSON/],
      [{ calc: { inputSchema: { a: { b: 1n } } } }, /inputSchema: not JSON/],
      [{ calc: { title: "x" } }, /unknown field 'title'/],
    ];
    for (const [value, message] of cases) {
      const error = refusal(value, ["calc"]);
      expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
      expect(error.message).toMatch(message);
    }
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < CAPABILITY_INFO_LIMITS.schemaDepth + 1; i++) deep = { p: deep };
    expect(refusal({ calc: { inputSchema: deep } }, ["calc"]).message).toMatch(/nested deeper than 32/);
  });

  test("an actor's declaration reaches the registry of every member; an oversized one is refused at registration", async () => {
    process.env.HM_CAPINFO_TOKEN = "capinfo-secret";
    await using t = await startTestMesh(`
mesh: { name: capinfo, token_env: HM_CAPINFO_TOKEN }
supervisor:
  children:
    - { actor: calculator, module: "{ACTORS}/calculator.ts" }
    - { actor: echo, module: "{ACTORS}/echo.ts", capabilities: [mirror] }
`);
    const client = await connectMesh({ dir: t.dir, name: "capinfo-test", token: "capinfo-secret" });
    try {
      const calculator = client.registry.byAddress("calculator")!;
      expect(calculator.capabilityInfo?.calculator?.inputSchema).toMatchObject({ required: ["expression"] });
      expect(calculator.capabilityInfo?.calculator?.description).toContain("arithmetic");
      // The mesh file's extra capability has no declaration: only the module's is there.
      expect(Object.keys(client.registry.byAddress("echo")!.capabilityInfo ?? {})).toEqual(["echo"]);
      await using deep = spawnWithOutput(
        [BUN, join(import.meta.dir, "../../src/cli/main.ts"), "actor", join(FIXTURE_ACTORS, "oversized-capability-info.ts"), "--dir", t.dir, "--name", "deep"],
        { ...process.env, HERMES_MESH_TOKEN: "capinfo-secret" },
      );
      expect(await deep.proc.exited).not.toBe(0);
      expect(await deep.output).toContain("capability_info.deep.inputSchema: nested deeper than 32");
      expect(t.mesh.registry.byAddress("deep")).toBeUndefined();
      await waitFor(() => client.registry.byAddress("calculator")?.health === "healthy", "calculator still healthy", 5000);
    } finally {
      await client.close();
    }
  }, 60_000);
});
