/** `hermes-mesh up / ps / send` as a user runs them: real processes, signals, exit codes, files left behind. */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isAlive, spawnBun, tempDir, waitFor } from "../helpers.ts";

const CLI = join(import.meta.dir, "../../src/cli/main.ts");
const ECHO = join(import.meta.dir, "../../actors/echo.ts");

function cli(...args: string[]) {
  return cliWithEnv({}, ...args);
}

/** The CLI with these variables set (or, when undefined, removed) in its environment. */
function cliWithEnv(vars: Record<string, string | undefined>, ...args: string[]) {
  const env: Record<string, string | undefined> = { ...process.env, ...vars };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const r = Bun.spawnSync([process.execPath, CLI, ...args], { stdout: "pipe", stderr: "pipe", timeout: 30_000, env: env as Record<string, string> });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

const alive = isAlive;

describe("hermes-mesh up", () => {
  test("starts the tree, answers ps and send, restarts a killed actor, and stops cleanly on SIGTERM", async () => {
    using dir = tempDir();
    const yaml = join(dir.path, "mesh.yaml");
    writeFileSync(yaml, `mesh:\n  name: cli-up\nsupervisor:\n  intensity: 3\n  children:\n    - actor: echo\n      module: ${ECHO}\n      pool: 2\n    - actor: solo\n      module: ${ECHO}\n`);
    const run = join(dir.path, "run");
    await using up = spawnBun(CLI, ["up", yaml, "--dir", run, "--quiet", "--port", "0"]);
    await up.waitForLine(/^mesh 'cli-up' up in \d+ ms/);

    const ps = cli("ps", "--dir", run, "--json");
    expect(ps.code).toBe(0);
    const all = JSON.parse(ps.out).entries as Array<{ address: string; pid: number; health: string; kind: string }>;
    expect(all.filter((e) => e.kind === "client").map((e) => e.address)).toContain("gateway");
    const entries = all.filter((e) => e.kind === "actor");
    expect(entries.map((e) => e.address).sort()).toEqual(["echo#0", "echo#1", "solo"]);
    expect(entries.every((e) => e.health === "healthy" && alive(e.pid))).toBe(true);

    const table = cli("ps", "--dir", run);
    expect(table.out).toMatch(/ADDRESS\s+KIND\s+PID\s+HEALTH\s+RESTARTS\s+QUEUE/);

    const sent = cli("send", "solo", '{"text":"你好 🌍"}', "--dir", run);
    expect(sent).toMatchObject({ code: 0, out: '{"text":"你好 🌍"}\n' });
    const missing = cli("send", "nobody", "{}", "--dir", run);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("error 8 UNROUTABLE");
    expect(cli("send", "solo", "[1,2]", "--dir", run).code).toBe(2);
    // A payload too big for a command line, from a file and from standard input.
    const bigFile = join(dir.path, "big.json");
    const big = JSON.stringify({ text: "x".repeat(10 * 1024 * 1024) });
    writeFileSync(bigFile, big);
    const fromFile = cli("send", "solo", `@${bigFile}`, "--dir", run);
    expect(fromFile.code).toBe(0);
    expect(fromFile.out.length).toBe(big.length + 1);
    const fromStdin = Bun.spawnSync([process.execPath, CLI, "send", "solo", "-", "--dir", run], { stdin: Buffer.from('{"via":"stdin"}'), stdout: "pipe", stderr: "pipe", timeout: 30_000 });
    expect(fromStdin.stdout.toString()).toBe('{"via":"stdin"}\n');
    const noFile = cli("send", "solo", "@/nonexistent/payload.json", "--dir", run);
    expect(noFile.code).toBe(2);
    expect(noFile.err).toContain("cannot read the payload from @/nonexistent/payload.json");

    const solo = entries.find((e) => e.address === "solo")!.pid;
    process.kill(solo, "SIGKILL");
    await waitFor(() => {
      const now = JSON.parse(cli("ps", "--dir", run, "--json").out).entries as Array<{ address: string; restarts: number; health: string }>;
      const entry = now.find((e) => e.address === "solo")!;
      return entry.restarts === 1 && entry.health === "healthy";
    }, "solo to be restarted", 10_000);
    expect(cli("send", "solo", '{"after":"restart"}', "--dir", run).out).toBe('{"after":"restart"}\n');

    const pids = (JSON.parse(cli("ps", "--dir", run, "--json").out).entries as Array<{ pid?: number }>).map((e) => e.pid).filter((p): p is number => p !== undefined);
    // Printed right after the "up" line, but read from the pipe whenever it arrives: waited for, not looked up.
    const gateway = await up.waitForLine(/^gateway: /);
    expect(gateway).toMatch(/^gateway: http:\/\/127\.0\.0\.1:\d+ {2}and {2}.*gateway\.sock$/);
    // The printed try-it request and the trace command share a trace id of this run's own, not the protocol's example id.
    const tried = /"trace_id":"([^"]+)"/.exec(await up.waitForLine(/^try: curl /))?.[1];
    const traced = /^then: npx hermes-mesh trace (\S+) --dir /.exec(await up.waitForLine(/^then: /))?.[1];
    expect(tried).toMatch(/^t[0-9a-z]{8}$/);
    expect(traced).toBe(tried!);
    up.proc.kill("SIGTERM");
    expect(await up.proc.exited).toBe(0);
    expect(up.lines).toContain("stopped: every actor exited, sockets removed");
    expect(pids.filter(alive)).toEqual([]);
    expect(readdirSync(run).filter((f) => f.endsWith(".sock"))).toEqual([]);
  }, 60_000);

  test("the CLI finds the token in the variable the mesh file names, and a refusal says what to set", async () => {
    using dir = tempDir();
    const yaml = join(dir.path, "mesh.yaml");
    writeFileSync(yaml, `mesh:\n  name: cli-token\n  token_env: HM_TEST_MESH_TOKEN\nsupervisor:\n  children:\n    - actor: solo\n      module: ${ECHO}\n`);
    const run = join(dir.path, "run");
    await using up = spawnBun(CLI, ["up", yaml, "--dir", run, "--quiet", "--no-gateway"], { HM_TEST_MESH_TOKEN: "s3cret" });
    await up.waitForLine(/^mesh 'cli-token' up in \d+ ms/);
    const none = { HM_TEST_MESH_TOKEN: undefined, HERMES_MESH_TOKEN: undefined };

    // Only the variable of the mesh file exported: nothing else to do.
    expect(cliWithEnv({ ...none, HM_TEST_MESH_TOKEN: "s3cret" }, "send", "solo", '{"a":1}', "--dir", run)).toMatchObject({ code: 0, out: '{"a":1}\n' });
    expect(cliWithEnv({ ...none, HM_TEST_MESH_TOKEN: "s3cret" }, "ps", "--dir", run).code).toBe(0);
    // No token: the message names the variable and the flag.
    const missing = cliWithEnv(none, "send", "solo", "{}", "--dir", run);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("error 5");
    expect(missing.err).toContain("export HM_TEST_MESH_TOKEN=<token>");
    expect(missing.err).toContain("--token-env NAME");
    const psMissing = cliWithEnv(none, "ps", "--dir", run);
    expect(psMissing.code).toBe(1);
    expect(psMissing.err).toContain("export HM_TEST_MESH_TOKEN=<token>");
    // A wrong value says where it was read from.
    const wrong = cliWithEnv({ ...none, HERMES_MESH_TOKEN: "nope" }, "send", "solo", "{}", "--dir", run);
    expect(wrong.code).toBe(1);
    expect(wrong.err).toContain("the token in $HERMES_MESH_TOKEN is not this mesh's");
    // --token-env names any other variable.
    expect(cliWithEnv({ ...none, MY_VAULT_TOKEN: "s3cret" }, "send", "solo", '{"b":2}', "--dir", run, "--token-env", "MY_VAULT_TOKEN").out).toBe('{"b":2}\n');
    up.proc.kill("SIGTERM");
    expect(await up.proc.exited).toBe(0);
    expect(existsSync(join(run, "mesh.json"))).toBe(false);
  }, 60_000);

  test("a bad mesh file is refused with the line and column of every problem", () => {
    using dir = tempDir();
    const yaml = join(dir.path, "mesh.yaml");
    writeFileSync(yaml, `mesh:\n  name: bad\nsupervisor:\n  children:\n    - actor: echo\n      module: ${ECHO}\n      pool: two\n    - actor: ghost\n      module: ./missing.ts\n`);
    const result = cli("up", yaml, "--dir", join(dir.path, "run"));
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/mesh\.yaml:7:\d+: supervisor\.children\[0\]\.pool/);
    expect(result.err).toMatch(/mesh\.yaml:9:\d+: .*missing\.ts/);
    expect(existsSync(join(dir.path, "run", "supervisor.sock"))).toBe(false);
  });

  test("ps and send say clearly when no mesh runs there", () => {
    using dir = tempDir();
    const ps = cli("ps", "--dir", dir.path);
    expect(ps.code).toBe(1);
    expect(ps.err).toContain("cannot connect");
  });
});
