/**
 * The actor host bundle comes in two variants: a mesh on sockets runs one without the NATS
 * client, a mesh over NATS the full one (test/nats/ runs actors from it).
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { actorHostEntry, HOST_SOURCE } from "../../src/supervisor/actor-host-bundle.ts";

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
});
