/**
 * The package as a user gets it: `npm pack`, then a global install into a temp prefix with only
 * Node on the PATH (the `hermes-mesh` command must find the Bun installed with it, and
 * `hermes-mesh bench` must run from there), and another project that installs the tarball,
 * writes README's actor and client into its own folder, runs them with the installed command
 * and imports `hermes-mesh` under Bun.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { tempDir, waitFor } from "../helpers.ts";
import { VERSION } from "../../src/version.ts";

const ROOT = join(import.meta.dir, "../..");
const dir = tempDir("hm-package-");
afterAll(() => dir[Symbol.dispose]());

// Only Node and the system's tools: no Bun anywhere on this PATH.
const NODE_DIR = dirname(Bun.which("node")!);
const NODE_ONLY_PATH = [...new Set([NODE_DIR, "/usr/bin", "/bin"])].join(":");

function run(argv: string[], cwd: string, extraEnv: Record<string, string> = {}) {
  const r = Bun.spawnSync(argv, { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, PATH: NODE_ONLY_PATH, ...extraEnv }, timeout: 120_000 });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

/** The fenced block of README.md whose first line is `first`. */
function readmeBlock(first: string): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const block = readme.split("```").find((part) => part.split("\n")[1]?.trim() === first);
  if (!block) throw new Error(`README.md has no code block starting with '${first}'`);
  return block.slice(block.indexOf("\n") + 1);
}

let tarball = "";

describe("the packed package", () => {
  test("npm pack ships the sources, the launcher, the example actors and the bench harness, not tests or bench output", () => {
    expect(Bun.which("bun", { PATH: NODE_ONLY_PATH })).toBeNull();
    const packed = run(["npm", "pack", "--json", "--pack-destination", dir.path], ROOT);
    expect(packed.code).toBe(0);
    const [info] = JSON.parse(packed.out) as Array<{ filename: string; files: Array<{ path: string }> }>;
    tarball = join(dir.path, info!.filename);
    const files = info!.files.map((f) => f.path);
    expect(files).toContain("src/cli/launcher.mjs");
    expect(files).toContain("src/index.ts");
    expect(files).toContain("mesh/mesh-node.ts");
    expect(files).toContain("actors/mesh.yaml");
    expect(files).toContain("bench/cli.ts");
    expect(files).toContain("bench/fixtures/nats-fixture.ts");
    expect(files.some((f) => f.startsWith("test/") || f.startsWith("bench/results/"))).toBe(false);
  }, 60_000);

  test("a global install in a temp prefix runs `hermes-mesh` with only Node on the PATH", () => {
    const prefix = join(dir.path, "prefix");
    const installed = run(["npm", "install", "-g", "--prefer-offline", "--no-audit", "--no-fund", "--prefix", prefix, "--allow-scripts=bun,deno,msgpackr-extract", tarball], dir.path);
    expect(installed.err).not.toContain("ERR!");
    expect(installed.code).toBe(0);
    const version = run([join(prefix, "bin", "hermes-mesh"), "--version"], dir.path);
    expect(version).toMatchObject({ code: 0, out: `${VERSION}\n` });
    const help = run([join(prefix, "bin", "hermes-mesh"), "--help"], dir.path);
    expect(help.out).toContain("hermes-mesh <command>");
  }, 120_000);

  test("the installed `hermes-mesh bench` measures hermes and a mesh's actors against the raw socket, skips peers with how to install what they lack, writes nothing into the package", () => {
    const prefix = join(dir.path, "prefix");
    const installedPackage = join(prefix, "lib", "node_modules", "hermes-mesh");
    // As an install with --omit=optional has it: no nats client.
    rmSync(join(installedPackage, "node_modules", "nats"), { recursive: true, force: true });
    const cwd = join(dir.path, "bench-cwd");
    mkdirSync(cwd);
    // pingpong: the transport and the peers; hop: two actor processes of a real mesh.
    const bench = run([join(prefix, "bin", "hermes-mesh"), "bench", "pingpong", "hop", "--quick", "--duration", "0.5"], cwd);
    expect(bench.err).not.toContain("FAILED");
    expect(bench.code).toBe(0);
    expect(bench.out).toMatch(/^pingpong +hermes request p50 +same core .+ raw socket p50 /m);
    // A quick hop measures cross core only (bench/lib/placement.ts, measuredPlacements).
    expect(bench.out).toMatch(/^hop +actor hop p50 +cross core .+ raw socket p50 /m);
    expect(bench.out).toContain("pingpong: peer NATS request skipped: the nats package is not installed (npm install nats@");
    // --quick leaves Redis (and Node IPC) to the full run, and says so.
    expect(bench.out).toContain("pingpong: peer Redis streams request skipped: measured in the full run only");
    expect(bench.out).toContain(`commit hermes-mesh@${VERSION} (installed package)`);
    // Charts go to the current directory, never into the (possibly read-only) package.
    expect(bench.out).toContain(`in ${join(cwd, "hermes-mesh-bench")}`);
    expect(readdirSync(join(cwd, "hermes-mesh-bench"))).toEqual(expect.arrayContaining(["pingpong.svg", "hop.svg"]));
    expect(readdirSync(join(installedPackage, "bench"))).not.toContain("results");
  }, 60_000);

  test("another project installs the tarball: README's actor runs under `hermes-mesh up` and its client imports the package", async () => {
    const app = join(dir.path, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module", dependencies: { "hermes-mesh": `file:${tarball}` }, allowScripts: { bun: true, deno: true, "msgpackr-extract": true } }));
    const installed = run(["npm", "install", "--prefer-offline", "--no-audit", "--no-fund"], app);
    expect(installed.code).toBe(0);
    expect(installed.err).not.toContain("install-scripts");

    const runDir = join(app, "run");
    writeFileSync(join(app, "greeter.ts"), readmeBlock("// greeter.ts"));
    writeFileSync(join(app, "mesh.yaml"), readmeBlock("# mesh.yaml"));
    writeFileSync(join(app, "client.ts"), readmeBlock("// client.ts").replace('"/tmp/hermes-mesh-hello"', JSON.stringify(runDir)));

    const command = join(app, "node_modules", ".bin", "hermes-mesh");
    const up = Bun.spawn([command, "up", "mesh.yaml", "--dir", runDir, "--no-gateway", "--quiet"], { cwd: app, stdout: "pipe", stderr: "pipe", env: { ...process.env, PATH: NODE_ONLY_PATH } });
    const lines: string[] = [];
    (async () => {
      for await (const chunk of up.stdout.pipeThrough(new TextDecoderStream())) lines.push(...chunk.split("\n"));
    })();
    try {
      await waitFor(() => lines.some((l) => /^mesh 'hello' up in/.test(l)) || up.exitCode !== null, "the app's mesh to be up", 30_000);
      expect(up.exitCode).toBeNull();

      const sent = run([command, "send", "greeter", '{"name":"Ada"}', "--dir", runDir], app);
      expect(sent).toMatchObject({ code: 0, out: '{"greeting":"hello, Ada"}\n' });

      // The program runs on the Bun the package installed, importing "hermes-mesh" by name.
      const client = run([join(app, "node_modules", ".bin", "bun"), "client.ts"], app);
      expect(client.err).toBe("");
      expect(client.out).toMatch(/greeting: "hello, Ada"/);
    } finally {
      up.kill("SIGTERM");
      expect(await up.exited).toBe(0);
    }
    expect(readdirSync(runDir).filter((f) => f.endsWith(".sock"))).toEqual([]);
  }, 120_000);
});
