/**
 * The actor host bundle comes in two variants: a mesh on sockets runs one without the NATS
 * client, a mesh over NATS the full one (test/nats/ runs actors from it). An actor reads strings
 * with mesh/msgpack-values.ts's reader and never loads msgpackr's native extractor.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { actorHostEntry, HOST_SOURCE } from "../../src/supervisor/actor-host-bundle.ts";
import { startTestMesh } from "../actor/mesh-harness.ts";

// From source msgpackr loads the extractor at import (and is then given the reader).
const bundled = process.env.HERMES_ACTOR_HOST !== "source";

describe("actor host bundle", () => {
  test("a mesh on sockets gets a bundle without the NATS client, its NATS stand-ins carrying the reason", async () => {
    const sockets = await actorHostEntry(undefined, {});
    const nats = await actorHostEntry(undefined, { nats: true });
    expect(sockets).not.toBe(HOST_SOURCE); // built, not the fallback to source
    expect(nats).not.toBe(HOST_SOURCE);
    expect(sockets).not.toBe(nats);
    const withoutNats = readFileSync(sockets, "utf8");
    const withNats = readFileSync(nats, "utf8");
    expect(withNats).toContain("@nats-io/nats-core");
    expect(withoutNats).not.toContain("@nats-io/");
    expect(withoutNats).toContain("bundled for a mesh on sockets, without the NATS client");
    expect(withoutNats.length).toBeLessThan(withNats.length / 2);
    // Asked again, the same file: built once per variant and version of the sources.
    expect(await actorHostEntry(undefined, {})).toBe(sockets);
  }, 60_000);

  test.skipIf(!bundled)("an actor never loads msgpackr's native string extractor, and reads every kind of string", async () => {
    await using t = await startTestMesh(`
mesh: { name: own-strings }
supervisor:
  children:
    - { actor: echo, module: "{ACTORS}/echo.ts" }
`);
    const pid = t.pid("echo");
    const mapped = () => readFileSync(`/proc/${pid}/maps`, "utf8").includes("msgpackr-extract");
    expect(readFileSync(await actorHostEntry(undefined, {}), "utf8")).toContain("hermes-mesh.msgpackr-strings");
    const client = await t.client();
    // Short and long strings (fixstr, str8, str16), ASCII and not, as keys and as values.
    const payload = (i: number) => ({ text: `n${i} ${"ü€😀".repeat(i % 7)}`, long: "x".repeat(70 + (i % 50)), wide: "y".repeat(300 + i), [`key ${i % 3} é`]: ["a", "ß".repeat(20)] });
    for (let i = 0; i < 3000; i++) expect((await client.request("echo", payload(i), { timeoutMs: 5000 })).payload).toEqual(payload(i));
    expect(mapped()).toBe(false);
  }, 60_000);
});
