/**
 * Bun and Deno actors on one mesh (issue 14): a Bun supervisor starting Deno actors with the
 * Deno binary installed by npm, calls across the runtimes both ways, capability routing over
 * both, a durable Deno actor killed with SIGKILL under load, and the errors a mesh file asking
 * for Deno gets when Deno is missing or refuses a permission.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { denoBinary, tempDir, waitFor } from "../helpers.ts";
import { expectHandledOnce, requestKeys, startTestMesh } from "../actor/mesh-harness.ts";

const ROOT = join(import.meta.dir, "../..");

const MIXED = `
mesh: { name: mixed, scheduler: round_robin }
supervisor:
  children:
    - { actor: bunny, module: "{FIXTURES}/runtime-info.ts" }
    - { actor: dino, module: "{FIXTURES}/runtime-info.ts", runtime: deno }
`;

describe("a Bun mesh with Deno actors", () => {
  test("a Bun actor calls a Deno actor and a Deno actor calls a Bun actor", async () => {
    await using t = await startTestMesh(MIXED);
    const client = await t.client();
    const viaBun = (await client.request("bunny", { call: "dino" }, { timeoutMs: 10_000 })).payload;
    expect(viaBun).toMatchObject({ runtime: "bun", address: "bunny", answer: { runtime: "deno", address: "dino" } });
    const viaDeno = (await client.request("dino", { call: "bunny" }, { timeoutMs: 10_000 })).payload;
    expect(viaDeno).toMatchObject({ runtime: "deno", address: "dino", answer: { runtime: "bun", address: "bunny" } });
    // The Deno actor is a real Deno process, started by the supervisor and registered with its pid.
    expect(viaDeno.pid).toBe(t.pid("dino"));
  }, 60_000);

  test("capability routing spreads requests over the Bun and the Deno instance", async () => {
    await using t = await startTestMesh(MIXED);
    const client = await t.client();
    const seen = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      const { runtime } = (await client.request({ capability: "who" }, {}, { timeoutMs: 10_000 })).payload as { runtime: string };
      seen.set(runtime, (seen.get(runtime) ?? 0) + 1);
    }
    expect([...seen.keys()].sort()).toEqual(["bun", "deno"]);
    expect(seen.get("deno")).toBeGreaterThanOrEqual(5);
  }, 60_000);

  test("a Deno actor killed with SIGKILL is restarted and answers again", async () => {
    await using t = await startTestMesh(MIXED);
    const client = await t.client();
    const before = t.pid("dino");
    process.kill(before, "SIGKILL");
    await waitFor(() => t.mesh.registry.byAddress("dino")?.health === "healthy" && t.mesh.registry.byAddress("dino")?.pid !== before, "dino restarted", 20_000);
    const { payload } = await client.request("dino", {}, { timeoutMs: 10_000 });
    expect(payload).toMatchObject({ runtime: "deno", pid: t.pid("dino") });
    expect(t.mesh.registry.byAddress("dino")!.restarts).toBe(1);
  }, 60_000);

  test("mesh.runtime: deno makes every actor a Deno actor unless it says otherwise", async () => {
    await using t = await startTestMesh(`
mesh: { name: deno-default, runtime: deno }
supervisor:
  children:
    - { actor: one, module: "{FIXTURES}/runtime-info.ts" }
    - { actor: two, module: "{FIXTURES}/runtime-info.ts", runtime: bun }
`);
    const client = await t.client();
    expect((await client.request("one", {}, { timeoutMs: 10_000 })).payload.runtime).toBe("deno");
    expect((await client.request("two", {}, { timeoutMs: 10_000 })).payload.runtime).toBe("bun");
  }, 60_000);

  test("a write Deno refuses names the flag; deno_permissions grants it", async () => {
    using outside = tempDir("hm-deno-outside-");
    const touched = join(outside.path, "touched");
    const meshOf = (permissions: string) => `
mesh: { name: deno-perm }
supervisor:
  children:
    - { actor: dino, module: "{FIXTURES}/runtime-info.ts", runtime: deno, env: { HM_TOUCH: "${touched}" }${permissions} }
`;
    const refused = await startTestMesh(meshOf("")).then(
      async (t) => {
        await t[Symbol.asyncDispose]();
        return undefined;
      },
      (e: Error & { output?: string[] }) => e,
    );
    expect(refused?.message).toContain("failed to start");
    expect(refused?.output?.join("\n")).toContain("--allow-write");
    await using t = await startTestMesh(meshOf(`, deno_permissions: ["--allow-write=${outside.path}"]`));
    expect((await (await t.client()).request("dino", {}, { timeoutMs: 10_000 })).payload.runtime).toBe("deno");
    expect(await Bun.file(touched).exists()).toBe(true);
  }, 60_000);
});

describe("a Deno program using the public API", () => {
  test("connects to a Bun mesh, requests a Bun actor and streams 1,000 awaited events to it", async () => {
    await using t = await startTestMesh(`
mesh: { name: deno-client }
supervisor:
  children:
    - { actor: echo, module: "{ACTORS}/echo.ts" }
`);
    const proc = Bun.spawn([denoBinary(), "run", "--no-prompt", "--quiet", "--allow-read", `--allow-write=${t.dir}`, "--allow-env", "--allow-net", "--allow-sys=hostname,osRelease,uid,gid", join(import.meta.dir, "deno-client.ts"), t.dir, "echo"], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
    try {
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      expect({ code, err }).toEqual({ code: 0, err: "" });
      expect(JSON.parse(out.trim())).toEqual({ reply: { from: "deno", runtime: "deno" }, count: { events: 1000, address: "echo" } });
    } finally {
      clearTimeout(timer);
      proc.kill("SIGKILL");
    }
  }, 60_000);
});

describe("a durable Deno actor", () => {
  test("killed with SIGKILL 3 times under load, it handles every request exactly once", async () => {
    await using t = await startTestMesh(`
mesh: { name: deno-durable }
supervisor:
  intensity: 100
  period_ms: 5000
  backoff: { initial_ms: 1, max_ms: 20 }
  children:
    - { actor: ledger, module: "{FIXTURES}/ledger.ts", runtime: deno }
`);
    const client = await t.client();
    const total = 600;
    const load = requestKeys(client, "ledger", total, 50);
    for (const threshold of [50, 200, 400]) {
      await waitFor(() => load.answered() >= threshold && t.mesh.registry.byAddress("ledger")?.health === "healthy", `progress ${threshold} with the ledger up`, 30_000);
      process.kill(t.pid("ledger"), "SIGKILL");
      await waitFor(() => t.mesh.registry.byAddress("ledger")?.health !== "healthy", "the ledger to be seen down", 10_000);
    }
    await load.done;
    expect(load.answered()).toBe(total);
    expect(t.mesh.registry.byAddress("ledger")!.restarts).toBe(3);
    await expectHandledOnce(client, "ledger", total);
  }, 120_000);
});

describe("a mesh file asking for Deno where there is none", () => {
  test("fails at load, saying how to install it", () => {
    using dir = tempDir("hm-deno-missing-");
    const file = join(dir.path, "mesh.yaml");
    writeFileSync(file, `mesh: { name: nodeno }\nsupervisor:\n  children:\n    - { actor: dino, module: ${join(ROOT, "actors/echo.ts")}, runtime: deno }\n`);
    const run = Bun.spawnSync([process.execPath, join(ROOT, "src/cli/main.ts"), "up", file, "--no-gateway"], {
      env: { ...process.env, HERMES_DENO: join(dir.path, "no-such-deno") },
      stdout: "pipe",
      stderr: "pipe",
      timeout: 30_000,
    });
    const said = run.stderr.toString() + run.stdout.toString();
    expect(run.exitCode).not.toBe(0);
    expect(said).toMatch(/mesh\.yaml:4:\d+: supervisor\.children\[0\]\.runtime: no Deno binary found/);
    expect(said).toContain("npm install");
  }, 40_000);
});
