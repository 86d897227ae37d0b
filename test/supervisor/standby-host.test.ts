/**
 * The standby actor host: a restart handed to it runs as the actor, with the actor's own
 * environment and arguments; a start that changes a variable read at process start is spawned
 * fresh; a spare rehearses only while it waits; and no spare outlives its mesh or its supervisor.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { STANDBY_FLAG } from "../../src/actor/actor-host.ts";
import { childPids } from "../../bench/lib/cpu-time.ts";
import { createLogger } from "../../mesh/logger.ts";
import { ALLOCATOR_IDLE_PURGE, JIT_WARM_UP, MEMBER_RUNTIME_DEFAULTS } from "../../src/supervisor/member-process.ts";
import { StandbyHost } from "../../src/supervisor/standby-host.ts";
import type { SupervisorEvent } from "../../src/supervisor/supervisor-events.ts";
import { startTestMesh } from "../actor/mesh-harness.ts";
import { BUN, tempDir, waitFor } from "../helpers.ts";

const FIXTURE = join(import.meta.dir, "env-actor-fixture.ts");
const HOST = join(import.meta.dir, "../../src/actor/host-main.ts");
const silent = createLogger({}, () => {});

/** The private directories of standby hosts' rehearsals (src/actor/rehearsal.ts) in the temporary directory. */
const rehearsalDirs = (where = tmpdir()) => readdirSync(where).filter((name) => name.startsWith("hermes-standby-"));

/**
 * Pids of this process's children started as a standby actor host: waiting spares, and also the
 * actors that took one (every Bun actor of a tree but the first starts that way), so the tests
 * counting spares here run one-actor meshes.
 */
function spares(): number[] {
  return childPids().filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(STANDBY_FLAG);
    } catch {
      return false; // gone meanwhile
    }
  });
}

const startups = (events: SupervisorEvent[], child: string) =>
  events.flatMap((e) => (e.type === "started" && e.child === child ? [e.startup ?? {}] : []));

describe("standby actor host", () => {
  // A stopped mesh lets its spare go, which exits by itself after its current round: none of
  // them may be taken for the next test's.
  afterEach(async () => {
    await waitFor(() => spares().length === 0, "the spares of the test's meshes gone", 10_000);
  });

  test("a restart is handed to the standby, which runs as the actor with its environment and arguments", async () => {
    await using t = await startTestMesh(`
mesh: { name: standby-env }
supervisor:
  children:
    - { actor: envy, module: ${FIXTURE}, env: { HM_TEST_GREETING: hello } }
`);
    const client = await t.client();
    const ask = async () => (await client.request("envy", { env: ["HM_TEST_GREETING", "HERMES_SPAWN_SECRET", "HERMES_MESH_DIR"] }, { timeoutMs: 5000 })).payload;
    const first = await ask();
    await waitFor(() => spares().length === 1, "a spare once the mesh is up");
    const spare = spares()[0]!;
    process.kill(t.pid("envy"), "SIGKILL");
    await waitFor(() => t.mesh.registry.byAddress("envy")?.health === "healthy" && t.mesh.registry.byAddress("envy")?.pid === spare, "envy restarted in the spare", 10_000);
    const second = await ask();
    expect(second.pid).toBe(spare);
    // The same as a process spawned for it sees: its own variables, its arguments, no secret left.
    expect(second.env).toEqual(first.env);
    expect(second.env).toEqual({ HM_TEST_GREETING: "hello", HERMES_SPAWN_SECRET: null, HERMES_MESH_DIR: t.dir });
    expect(second.argv).toEqual(first.argv);
    expect(second.argv).toContain("--module");
    const [initial, restart] = startups(t.events, "envy");
    expect(initial!.standby).toBeUndefined();
    expect(restart!.standby).toBe(1);
    // Where the restart's time went, in order.
    expect(restart!.spawned!).toBeLessThanOrEqual(restart!.imported!);
    expect(restart!.imported!).toBeLessThanOrEqual(restart!.registered!);
    expect(restart!.registered!).toBeLessThanOrEqual(restart!.ready!);
    // The next spare comes a little after the restart that took this one.
    await waitFor(() => spares().some((pid) => pid !== spare), "a new spare");
  }, 30_000);

  test("an actor that sets a variable read at process start is spawned fresh", async () => {
    await using t = await startTestMesh(`
mesh: { name: standby-tz }
supervisor:
  children:
    - { actor: envy, module: ${FIXTURE}, env: { TZ: Pacific/Auckland } }
`);
    await waitFor(() => spares().length === 1, "a spare once the mesh is up");
    const spare = spares()[0]!;
    const before = t.pid("envy");
    process.kill(before, "SIGKILL");
    await waitFor(() => t.mesh.registry.byAddress("envy")?.health === "healthy" && t.mesh.registry.byAddress("envy")?.pid !== before, "envy restarted", 10_000);
    expect(t.pid("envy")).not.toBe(spare);
    expect(startups(t.events, "envy")[1]!.standby).toBeUndefined();
    const client = await t.client();
    expect((await client.request("envy", { env: ["TZ"] }, { timeoutMs: 5000 })).payload.env).toEqual({ TZ: "Pacific/Auckland" });
    expect(spares()).toEqual([spare]); // still waiting
  }, 30_000);

  const [ALLOCATOR_VAR] = Object.keys(ALLOCATOR_IDLE_PURGE) as (keyof typeof ALLOCATOR_IDLE_PURGE)[];
  const [JIT_VAR] = Object.keys(JIT_WARM_UP) as (keyof typeof JIT_WARM_UP)[];
  const RUNTIME_VARS = Object.keys(MEMBER_RUNTIME_DEFAULTS);
  /** Runs `body` with the runtime variables of this process (the supervisor's) as `values` says, the others unset. */
  async function withRuntimeVars(values: Record<string, string>, body: () => Promise<void>): Promise<void> {
    const inherited = Object.fromEntries(RUNTIME_VARS.map((name) => [name, process.env[name]]));
    for (const name of RUNTIME_VARS) delete process.env[name];
    Object.assign(process.env, values);
    try {
      await body();
    } finally {
      for (const [name, value] of Object.entries(inherited)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  }

  test("members run with the runtime defaults (allocator, compiler); an actor's own value wins, spawned fresh", () =>
    // Without the variables here, the defaults are what members get.
    withRuntimeVars({}, async () => {
      await using t = await startTestMesh(`
mesh: { name: standby-alloc }
supervisor:
  intensity: 5
  children:
    - { actor: plain, module: ${FIXTURE} }
    - { actor: own, module: ${FIXTURE}, env: { ${ALLOCATOR_VAR}: "250", ${JIT_VAR}: "700" } }
`);
      const client = await t.client();
      const seen = async (actor: string) => (await client.request(actor, { env: RUNTIME_VARS }, { timeoutMs: 5000 })).payload.env;
      const own = { ...MEMBER_RUNTIME_DEFAULTS, [ALLOCATOR_VAR!]: "250", [JIT_VAR!]: "700" };
      expect(await seen("plain")).toEqual({ ...MEMBER_RUNTIME_DEFAULTS });
      expect(await seen("own")).toEqual(own);
      await waitFor(() => spares().length === 1, "a spare once the mesh is up");
      const spare = spares()[0]!;
      const restarted = async (actor: string) => {
        const before = t.pid(actor);
        process.kill(before, "SIGKILL");
        await waitFor(() => t.mesh.registry.byAddress(actor)?.health === "healthy" && t.mesh.registry.byAddress(actor)?.pid !== before, `${actor} restarted`, 10_000);
        return t.pid(actor);
      };
      // Bun reads them at start: not a standby's to change. The spare stays for the next.
      expect(await restarted("own")).not.toBe(spare);
      expect(await seen("own")).toEqual(own);
      expect(await restarted("plain")).toBe(spare);
      expect(await seen("plain")).toEqual({ ...MEMBER_RUNTIME_DEFAULTS });
    }), 30_000);

  test("a runtime variable's value in the supervisor's environment is passed on as it is", () =>
    withRuntimeVars({ [ALLOCATOR_VAR!]: "500", [JIT_VAR!]: "800" }, async () => {
      await using t = await startTestMesh(`
mesh: { name: standby-alloc-env }
supervisor:
  children:
    - { actor: plain, module: ${FIXTURE} }
`);
      const client = await t.client();
      expect((await client.request("plain", { env: RUNTIME_VARS }, { timeoutMs: 5000 })).payload.env).toEqual({ ...MEMBER_RUNTIME_DEFAULTS, [ALLOCATOR_VAR!]: "500", [JIT_VAR!]: "800" });
    }), 30_000);

  test("a spare that dies before it took on the start does not cost the actor its restart", async () => {
    // Default settings: a second failure within 5 s would make the supervisor give up.
    await using t = await startTestMesh(`
mesh: { name: standby-gone }
supervisor:
  children:
    - { actor: envy, module: ${FIXTURE} }
`);
    await waitFor(() => spares().length === 1, "a spare once the mesh is up");
    const spare = spares()[0]!;
    // Stopped, the spare is handed the restart but cannot read it; then it dies without a word.
    process.kill(spare, "SIGSTOP");
    const before = t.pid("envy");
    process.kill(before, "SIGKILL");
    await waitFor(() => t.mesh.registry.byAddress("envy")?.pid === spare, "the restart handed to the spare", 10_000);
    process.kill(spare, "SIGKILL");
    await waitFor(() => t.mesh.registry.byAddress("envy")?.health === "healthy", "envy restarted", 10_000);
    expect(t.pid("envy")).not.toBe(spare);
    expect(t.pid("envy")).not.toBe(before);
    expect(t.mesh.root.state).toBe("running");
    expect(t.mesh.root.status()[0]).toMatchObject({ state: "running", restarts: 1 });
    expect(t.events.filter((e) => e.type === "exited")).toHaveLength(1); // the actor's crash only
    const client = await t.client();
    expect((await client.request("envy", {}, { timeoutMs: 5000 })).payload.pid).toBe(t.pid("envy"));
  }, 30_000);

  test("no spare outlives its mesh, nor its rehearsal's directory", async () => {
    // The mesh's own temporary directory (members inherit TMPDIR): other processes' spares rehearse in the shared one.
    using own = tempDir("hm-standby-tmp-");
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = own.path;
    try {
      const t = await startTestMesh(`
mesh: { name: standby-stop }
supervisor:
  children:
    - { actor: envy, module: ${FIXTURE} }
`);
      try {
        await waitFor(() => spares().length === 1, "a spare once the mesh is up");
        // It rehearses where this test looks.
        expect(readFileSync(`/proc/${spares()[0]}/environ`, "utf8").split("\0")).toContain(`TMPDIR=${own.path}`);
      } finally {
        await t[Symbol.asyncDispose]();
      }
      await waitFor(() => spares().length === 0, "the spare gone with the mesh");
      // Stopped while it may still be rehearsing: its private directory goes with it.
      expect(rehearsalDirs(own.path)).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  }, 30_000);

  test("a spare let go mid-rehearsal exits by itself and leaves no directory behind", async () => {
    // Its own temporary directory: spares of other processes (a CLI test's mesh) rehearse in the shared one.
    using own = tempDir("hm-standby-tmp-");
    const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/", TMPDIR: own.path };
    const standby = new StandbyHost([BUN, HOST], env, silent);
    standby.prepare();
    const spare = spares()[0]!;
    // Its rehearsal's directory lives for the set-up and the first round: caught by a quick poll.
    await waitFor(() => rehearsalDirs(own.path).length > 0, "the spare rehearsing", 20_000);
    standby.close();
    await waitFor(() => !spares().includes(spare), "the spare gone by itself", 10_000);
    expect(rehearsalDirs(own.path)).toEqual([]);
  }, 30_000);

  test("a spare handed its start at once does not rehearse (a tree's next child)", async () => {
    using own = tempDir("hm-standby-tmp-");
    const created: string[] = [];
    // Every entry made in its temporary directory, the rehearsal's private one included, however briefly it lives.
    const watcher = watch(own.path, (_kind, name) => {
      if (name) created.push(String(name));
    });
    try {
      const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/", TMPDIR: own.path };
      const standby = new StandbyHost([BUN, HOST], env, silent);
      standby.prepare();
      // Without --module the host refuses to run: the spare took the assignment and exits with 2.
      const taken = standby.take([BUN, HOST], { env: { ...env, HM_TEST: "1" } });
      expect(await taken!.exited).toBe(2);
      standby.close();
      // The watcher has seen all that came before once it sees a file made after the exit.
      writeFileSync(join(own.path, "after-exit"), "");
      await waitFor(() => created.includes("after-exit"), "the watcher caught up");
      expect(created.filter((name) => name.startsWith("hermes-standby-"))).toEqual([]);
    } finally {
      watcher.close();
    }
  }, 30_000);

  test("a spare exits when its supervisor's pipe closes before any assignment", async () => {
    const proc = Bun.spawn([BUN, HOST, STANDBY_FLAG], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    proc.stdin.end();
    expect(await proc.exited).toBe(0);
  }, 30_000);

  test("take() hands over only what a spare can become: the host it runs, no cwd, no start-up variables", async () => {
    const env = { PATH: process.env.PATH ?? "", HOME: "/nowhere" };
    const standby = new StandbyHost([BUN, HOST], env, silent);
    try {
      expect(standby.take([BUN, HOST, "--name", "x"], { env })).toBeUndefined(); // none prepared
      standby.prepare();
      expect(standby.take([BUN, "other.ts"], { env })).toBeUndefined();
      expect(standby.take([BUN, HOST], { env, cwd: "/" })).toBeUndefined();
      expect(standby.take([BUN, HOST], { env: { ...env, BUN_JSC_forceRAMSize: "1" } })).toBeUndefined();
      expect(standby.take([BUN, HOST], { env: { ...env, MIMALLOC_PURGE_DELAY: "-1" } })).toBeUndefined();
      // Without --module the host refuses to run: the spare took the assignment and exits with 2.
      const taken = standby.take([BUN, HOST], { env: { ...env, HM_TEST: "1" } });
      expect(taken).toBeDefined();
      expect(standby.take([BUN, HOST], { env })).toBeUndefined(); // one spare, taken
      expect(await taken!.exited).toBe(2);
    } finally {
      standby.close();
    }
  }, 30_000);
});
