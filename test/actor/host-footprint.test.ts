/**
 * What an actor process loads: for a plain actor (one that imports only defineActor, as
 * actors/echo.ts) no zod, hono or yaml, whether the host runs from its bundle (as the supervisor
 * starts it) or from source (HERMES_ACTOR_HOST=source), after the handshakes, registry updates
 * and requests of a real mesh. Only what the process holds is asserted, never its memory
 * (bench/footprint.bench.ts measures that).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { sep } from "node:path";
import { startTestMesh } from "./mesh-harness.ts";

const HEAVY = ["zod", "hono", "yaml"];
const MESH = `
mesh:
  name: footprint
supervisor:
  children:
    - { actor: inventory, module: "{FIXTURES}/inventory.ts", pool: 2 }
`;

interface Inventory {
  entry: string;
  modules: string[];
  zodRan: boolean;
}

/** Starts the mesh, has both instances talk (and see each other's registry updates), then asks each what it holds. */
async function inventories(): Promise<Inventory[]> {
  await using t = await startTestMesh(MESH);
  const client = await t.client();
  const answers: Inventory[] = [];
  for (const address of ["inventory#0", "inventory#1"]) {
    expect((await client.request(address, { text: "hi" }, { timeoutMs: 10_000 })).payload).toEqual({ text: "hi" });
    answers.push((await client.request(address, { op: "inventory" }, { timeoutMs: 10_000 })).payload as unknown as Inventory);
  }
  return answers;
}

const heavyModules = (modules: string[]) => modules.filter((path) => HEAVY.some((name) => path.includes(`${sep}node_modules${sep}${name}${sep}`)));

describe("an idle actor process", () => {
  const saved = process.env.HERMES_ACTOR_HOST;
  afterEach(() => {
    if (saved === undefined) delete process.env.HERMES_ACTOR_HOST;
    else process.env.HERMES_ACTOR_HOST = saved;
  });

  test("run from the host bundle loads no zod, hono or yaml", async () => {
    delete process.env.HERMES_ACTOR_HOST;
    for (const inventory of await inventories()) {
      // A mesh on sockets: the bundle without the NATS client (src/supervisor/actor-host-bundle.ts).
      expect(inventory.entry).toMatch(/actor-host-[0-9a-f]+-sockets[/\\]host-main\.js$/);
      // The listing is real: the actor's own module is in it.
      expect(inventory.modules.some((path) => path.endsWith(`${sep}inventory.ts`))).toBe(true);
      expect(heavyModules(inventory.modules)).toEqual([]);
      expect(inventory.zodRan).toBe(false);
    }
  });

  test("run from source loads no zod, hono or yaml: every module it loads is listed", async () => {
    process.env.HERMES_ACTOR_HOST = "source";
    for (const inventory of await inventories()) {
      expect(inventory.entry).toMatch(/src[/\\]actor[/\\]host-main\.ts$/);
      // Every file of the host is listed from source, the mesh core and its one library included.
      for (const file of ["mesh/connection.ts", "mesh/registry.ts", "mesh/handshake.ts", "src/actor/actor-runtime.ts"]) {
        expect(inventory.modules.some((path) => path.endsWith(file.replaceAll("/", sep)))).toBe(true);
      }
      expect(inventory.modules.some((path) => path.includes(`${sep}node_modules${sep}msgpackr${sep}`))).toBe(true);
      expect(heavyModules(inventory.modules)).toEqual([]);
      expect(inventory.zodRan).toBe(false);
    }
  });
});
