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

  test("demo starts a peer process, talks to it and cleans up", () => {
    const demo = run("demo", "--seconds", "0.3");
    expect(demo.code).toBe(0);
    expect(demo.out).toContain('response {"text":"你好, hermes 🌍"}');
    expect(demo.out).toContain("steps 1, 2, 3");
    expect(demo.out).toContain("error code 9 TTL_EXPIRED");
    expect(demo.out).toMatch(/\d+ round trips in 0.3 s: p50 [\d.]+ us/);
    const pid = Number(/pid (\d+)/.exec(demo.out)?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(() => process.kill(pid, 0)).toThrow(); // the peer is gone
  });
});
