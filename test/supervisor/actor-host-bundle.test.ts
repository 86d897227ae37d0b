/**
 * The actor host bundle comes in two variants: a mesh on sockets runs one without the NATS
 * client, a mesh over NATS the full one (test/nats/ runs actors from it). An actor loads
 * msgpackr's native string extractor only once it is busy, and reads strings the same before
 * and after.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { actorHostEntry, HOST_SOURCE, NATIVE_STRINGS_AFTER } from "../../src/supervisor/actor-host-bundle.ts";
import { startTestMesh } from "../actor/mesh-harness.ts";

// From source msgpackr loads the extractor at import; without a binary, or with msgpackr's
// switch off, there is nothing to load.
const lazy = process.env.HERMES_ACTOR_HOST !== "source" && process.env.MSGPACKR_NATIVE_ACCELERATION_DISABLED === undefined &&
  readFileSync(await actorHostEntry(undefined, {}), "utf8").includes("native string extractor is not loaded yet");

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

  test.skipIf(!lazy)("an actor loads msgpackr's native string extractor once busy, and reads strings the same before and after", async () => {
    await using t = await startTestMesh(`
mesh: { name: lazy-native }
supervisor:
  children:
    - { actor: echo, module: "{ACTORS}/echo.ts" }
`);
    const pid = t.pid("echo");
    const mapped = () => readFileSync(`/proc/${pid}/maps`, "utf8").includes("msgpackr-extract");
    const client = await t.client();
    // Short and long strings, ASCII and not, as keys and as values: both of msgpackr's readers.
    const payload = (i: number) => ({ text: `n${i} ${"ü€😀".repeat(i % 7)}`, long: "x".repeat(70 + (i % 50)), [`key ${i % 3} é`]: ["a", "ß".repeat(20)] });
    const answered = async (i: number) => expect((await client.request("echo", payload(i), { timeoutMs: 5000 })).payload).toEqual(payload(i));
    await answered(0);
    expect(mapped()).toBe(false);
    let sent = 1;
    while (!mapped() && sent < 3 * NATIVE_STRINGS_AFTER) await answered(sent++);
    expect(mapped()).toBe(true);
    // One or two calls per request (a body whose map keys need the exact reading is read twice), not at once.
    expect(sent).toBeGreaterThan(NATIVE_STRINGS_AFTER / 4);
    for (let i = 0; i < 200; i++) await answered(sent + i); // the native reader's strings
  }, 60_000);
});
