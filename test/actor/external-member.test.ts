/**
 * External members (issue 16): an actor started outside the supervisor tree with
 * `hermes-mesh actor`, as another container would, registers with the mesh token, is routed to
 * like any actor and shown as external; killed with SIGKILL it is down, not restarted or
 * signalled by the supervisor, and requests sent meanwhile are answered once it is started
 * again; it may not take a name the tree owns, and a wrong token is code 5 naming the variable.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { startTestMesh, FIXTURE_ACTORS } from "./mesh-harness.ts";
import { BUN, spawnWithOutput, waitFor, type OutputProcess } from "../helpers.ts";
import { connectMesh } from "../../src/actor/connect-mesh.ts";

const CLI = join(import.meta.dir, "../../src/cli/main.ts");
const TOKEN = "external-secret";

const MESH = `
mesh: { name: external, token_env: HM_EXTERNAL_TOKEN }
supervisor:
  children:
    - { actor: echo, module: "{ACTORS}/echo.ts" }
`;

/** `hermes-mesh actor …` as a process of its own, its output kept. */
function externalActor(args: string[], env: Record<string, string>): OutputProcess {
  return spawnWithOutput([BUN, CLI, "actor", ...args], { ...process.env, ...env });
}

describe("an actor started outside the tree", () => {
  test("joins with the token, is routed to and shown as external; after kill -9 and a new start, nothing is lost", async () => {
    process.env.HM_EXTERNAL_TOKEN = TOKEN;
    await using t = await startTestMesh(MESH);
    const client = await connectMesh({ dir: t.dir, name: "test", token: TOKEN });
    try {
    const args = [join(FIXTURE_ACTORS, "runtime-info.ts"), "--dir", t.dir, "--name", "outside"];
    const env = { HERMES_MESH_TOKEN: TOKEN };
    {
      await using first = externalActor(args, env);
      await waitFor(() => t.mesh.registry.byAddress("outside")?.health === "healthy", "the external actor healthy", 20_000);
      const entry = t.mesh.registry.byAddress("outside")!;
      // Not durable: what a crash leaves unacknowledged may move to a sibling (docs/actors.md).
      expect(entry).toMatchObject({ external: true, kind: "actor", pid: first.proc.pid, durable: false });
      expect((await client.request("outside", {}, { timeoutMs: 10_000 })).payload).toMatchObject({ address: "outside", pid: first.proc.pid });
      // By capability too: it declares "who" in its module.
      expect((await client.request({ capability: "who" }, {}, { timeoutMs: 10_000 })).payload.address).toBe("outside");
      // Spawned, not spawnSync: the supervisor answering ps runs in this process.
      const ps = Bun.spawn([BUN, CLI, "ps", "--dir", t.dir], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
      expect((await new Response(ps.stdout).text()) + (await new Response(ps.stderr).text())).toMatch(/outside\s+external\s+\d+\s+healthy/);
      first.proc.kill("SIGKILL");
      await first.proc.exited;
    }
    await waitFor(() => t.mesh.registry.byAddress("outside")?.health === "down", "the external actor seen down", 10_000);
    // Sent while it is down: held by the sender, delivered when it is back.
    const waiting = Array.from({ length: 20 }, (_, i) => client.request("outside", { i }, { timeoutMs: 30_000 }));
    await using second = externalActor(args, env);
    const answers = await Promise.all(waiting);
    expect(answers.every((a) => a.payload.pid === second.proc.pid)).toBe(true);
    // The supervisor neither restarted nor signalled it: the tree's own actor is untouched.
    expect(t.mesh.registry.byAddress("echo")!.restarts).toBe(0);
    expect(t.mesh.registry.byAddress("outside")!.restarts).toBe(1);
    } finally {
      await client.close();
    }
  }, 90_000);

  test("a name the tree owns is refused; a wrong token is code 5 naming the variable", async () => {
    process.env.HM_EXTERNAL_TOKEN = TOKEN;
    await using t = await startTestMesh(MESH);
    const module = join(FIXTURE_ACTORS, "runtime-info.ts");
    await using owned = externalActor([module, "--dir", t.dir, "--name", "echo"], { HERMES_MESH_TOKEN: TOKEN });
    expect(await owned.proc.exited).not.toBe(0);
    expect(await owned.output).toContain("the supervisor tree owns that name");
    await using wrong = externalActor([module, "--dir", t.dir, "--name", "intruder"], { HERMES_MESH_TOKEN: "not-it" });
    expect(await wrong.proc.exited).not.toBe(0);
    const said = await wrong.output;
    expect(said).toContain("error 5 AUTH_FAILED");
    expect(said).toContain("HM_EXTERNAL_TOKEN");
    expect(t.mesh.registry.byAddress("intruder")).toBeUndefined();
    expect(t.mesh.registry.byAddress("echo")!.external).toBeUndefined();
  }, 60_000);
  test("with --grace-ms it is forgotten that long after it goes, and not before", async () => {
    process.env.HM_EXTERNAL_TOKEN = TOKEN;
    await using t = await startTestMesh(MESH);
    {
      await using brief = externalActor([join(FIXTURE_ACTORS, "runtime-info.ts"), "--dir", t.dir, "--name", "brief", "--grace-ms", "1500"], { HERMES_MESH_TOKEN: TOKEN });
      await waitFor(() => t.mesh.registry.byAddress("brief")?.health === "healthy", "the external actor healthy", 20_000);
      brief.proc.kill("SIGKILL");
      await brief.proc.exited;
    }
    // Down first (still known, so senders hold what they have for it), forgotten after the grace.
    await waitFor(() => t.mesh.registry.byAddress("brief")?.health === "down", "the external actor seen down", 10_000);
    await waitFor(() => t.mesh.registry.byAddress("brief") === undefined, "the external actor forgotten", 10_000);
  }, 60_000);
  test("a pool mixes supervised and external instances: `external: 1` leaves who#1 to an external member", async () => {
    process.env.HM_EXTERNAL_TOKEN = TOKEN;
    await using t = await startTestMesh(`
mesh: { name: mixed-pool, token_env: HM_EXTERNAL_TOKEN, scheduler: round_robin }
supervisor:
  children:
    - { actor: who, module: "{FIXTURES}/runtime-info.ts", pool: 1, external: 1, capabilities: [pool.who] }
`);
    // The supervised instance runs; the external one waits, down, for its member.
    expect(t.mesh.registry.byAddress("who#0")).toMatchObject({ health: "healthy" });
    expect(t.mesh.registry.byAddress("who#1")).toMatchObject({ health: "down", external: true });
    await using outside = externalActor([join(FIXTURE_ACTORS, "runtime-info.ts"), "--dir", t.dir, "--name", "who#1"], { HERMES_MESH_TOKEN: TOKEN });
    await waitFor(() => t.mesh.registry.byAddress("who#1")?.health === "healthy", "the external instance healthy", 20_000);
    expect(t.mesh.registry.byAddress("who#1")!.capabilities).toContain("pool.who");
    expect(t.mesh.registry.byAddress("who#0")!.durable).toBe(false);
    const client = await connectMesh({ dir: t.dir, name: "test", token: TOKEN });
    try {
      const answered = new Set<string>();
      for (let i = 0; i < 10; i++) answered.add(String((await client.request("who", {}, { timeoutMs: 10_000 })).payload.address));
      expect([...answered].sort()).toEqual(["who#0", "who#1"]);
      expect((await client.request("who#1", {}, { timeoutMs: 10_000 })).payload.pid).toBe(outside.proc.pid);
    } finally {
      await client.close();
    }
    // An instance the mesh file gives the tree cannot be taken from outside.
    await using taken = externalActor([join(FIXTURE_ACTORS, "runtime-info.ts"), "--dir", t.dir, "--name", "who#0"], { HERMES_MESH_TOKEN: TOKEN });
    expect(await taken.proc.exited).not.toBe(0);
    expect(await taken.output).toContain("the supervisor tree owns that name");
  }, 60_000);
});
