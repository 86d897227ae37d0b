/** The hermes-mesh command, run as a user runs it: a real process, real exit codes. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };

const CLI = join(import.meta.dir, "../../src/cli/main.ts");

function run(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI, ...args], { stdout: "pipe", stderr: "pipe", timeout: 30_000 });
  return { code: result.exitCode, out: result.stdout.toString(), err: result.stderr.toString() };
}

describe("hermes-mesh command", () => {
  test("--version prints the package version", () => {
    expect(run("--version")).toMatchObject({ code: 0, out: `${pkg.version}\n` });
  });

  test("--help lists the commands; a subcommand's --help is its own", () => {
    const top = run("--help");
    expect(top.code).toBe(0);
    expect(top.out).toContain("demo");
    expect(top.out).toContain("bench");
    const bench = run("bench", "--help");
    expect(bench.code).toBe(0);
    expect(bench.out).toContain("Usage: hermes-mesh bench");
  });

  test("an unknown command or option exits 2 with a one-line reason", () => {
    const unknown = run("frobnicate");
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain("unknown command 'frobnicate'");
    const badOption = run("demo", "--bogus");
    expect(badOption.code).toBe(2);
    expect(badOption.err).toContain("Unknown option '--bogus'");
    expect(badOption.err).not.toContain("    at ");
  });

  test("demo runs the example mesh, survives a kill -9 under load, and leaves no process behind", () => {
    const demo = run("demo", "--seconds", "0.3");
    expect(demo.code).toBe(0);
    expect(demo.out).toMatch(/answered \{"text":"你好, hermes 🌍"\}/);
    expect(demo.out).toContain("progress 1, 2, 3");
    expect(demo.out).toContain("error 8 UNROUTABLE");
    expect(demo.out).toContain("500 answered, all intact");
    expect(demo.out).toMatch(/\d+ round trips in 0.3 s: p50 [\d.]+ us/);
    const pids = [...demo.out.matchAll(/pid (\d+)/g)].map((m) => Number(m[1]));
    expect(pids.length).toBeGreaterThanOrEqual(3);
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow(); // every actor process is gone
  });
});
