/**
 * A mesh never outlives what started it: SIGTERM to the `hermes-mesh` launcher or to `npm start`
 * (what docker stop, systemd and CI send), and kill -9 of the launcher, all stop every process
 * of the mesh and free its sockets and port. Real processes, real signals.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { childPids } from "../../bench/lib/cpu-time.ts";
import { MEMBER_RUNTIME_DEFAULTS } from "../../src/supervisor/member-process.ts";
import { BUN, tempDir, waitFor } from "../helpers.ts";

const ROOT = join(import.meta.dir, "../..");
const LAUNCHER = join(ROOT, "src/cli/launcher.mjs");
const CLI = join(ROOT, "src/cli/main.ts");
const ECHO = join(ROOT, "actors/echo.ts");

/** Every live process below `root`, read from /proc (parent pid is field 4 of /proc/<pid>/stat). */
function descendants(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] !== "Z") parentOf.set(Number(name), Number(fields[1]));
    } catch {
      // exited while we read
    }
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const [child, parent] of parentOf) if (parent === pid) found.push(child), walk(child);
  };
  walk(root);
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
};

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });

// Whatever a test leaves behind is killed here, also when it failed half-way.
const leftovers: number[] = [];
afterEach(() => {
  for (const pid of leftovers.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone, as it should be
    }
  }
});

/** Starts `argv` (a launcher of `up`), waits for the mesh to be up, and returns what it spawned. */
async function startMesh(argv: string[], cwd: string) {
  // Without the runtime variables: what the launcher and the supervisor set is what is seen.
  const env: Record<string, string | undefined> = { ...process.env, PATH: `/usr/bin:/bin:${process.env.PATH}` };
  for (const name of Object.keys(MEMBER_RUNTIME_DEFAULTS)) delete env[name];
  const proc = Bun.spawn(argv, { cwd, stdout: "pipe", stderr: "pipe", stdin: "ignore", env });
  leftovers.push(proc.pid);
  const lines: string[] = [];
  (async () => {
    for await (const chunk of proc.stdout.pipeThrough(new TextDecoderStream())) lines.push(...chunk.split("\n"));
  })();
  // The gateway's line comes last of the start-up banner.
  await waitFor(() => lines.some((l) => l.startsWith("gateway: ")) || proc.exitCode !== null, "the mesh and its gateway to be up", 30_000);
  expect(proc.exitCode).toBeNull();
  const port = Number(/:(\d+) /.exec(lines.find((l) => l.startsWith("gateway: "))!)?.[1]);
  expect(port).toBeGreaterThan(0);
  const tree = descendants(proc.pid);
  leftovers.push(...tree);
  // The up process, the gateway and two echo actors at least (npm adds a shell).
  expect(tree.length).toBeGreaterThanOrEqual(4);
  expect(await portOpen(port)).toBe(true);
  return { proc, tree, port, lines };
}

/** The environment a process started with, as NAME=value entries; undefined once it is gone. */
function environOf(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  } catch {
    return undefined;
  }
}

function meshFile(dir: string, name: string): string {
  const yaml = join(dir, "mesh.yaml");
  writeFileSync(yaml, `mesh:\n  name: ${name}\nsupervisor:\n  children:\n    - actor: echo\n      module: ${ECHO}\n      pool: 2\n`);
  return yaml;
}

async function expectAllGone(tree: number[], port: number, run: string) {
  await waitFor(() => tree.every((pid) => !alive(pid)), "every process of the mesh to exit", 15_000);
  expect(await portOpen(port)).toBe(false);
  await waitFor(() => readdirSync(run).filter((f) => f.endsWith(".sock")).length === 0, "the sockets to be removed", 5_000);
}

describe("stopping a mesh through what started it", () => {
  test("SIGTERM to the Node launcher stops the whole mesh and exits 0", async () => {
    using dir = tempDir();
    const run = join(dir.path, "run");
    const mesh = await startMesh(["node", LAUNCHER, "up", meshFile(dir.path, "term"), "--dir", run, "--port", "0", "--quiet"], dir.path);
    // The CLI the launcher starts, its gateway and its actors: every Bun process of the mesh runs
    // with the runtime settings members get (src/supervisor/member-process.ts).
    // The CLI itself, the launcher's child, first: members would inherit a value it passed on.
    const [cli] = childPids(mesh.proc.pid);
    const cliEnv = environOf(cli!) ?? [];
    for (const [name, value] of Object.entries(MEMBER_RUNTIME_DEFAULTS)) {
      expect(cliEnv).toContain(`${name}=${value}`);
      const settings = mesh.tree.flatMap((pid) => environOf(pid)?.filter((entry) => entry.startsWith(`${name}=`)) ?? []);
      expect(settings.length).toBeGreaterThanOrEqual(4);
      expect(new Set(settings)).toEqual(new Set([`${name}=${value}`]));
    }
    mesh.proc.kill("SIGTERM");
    expect(await mesh.proc.exited).toBe(0);
    await expectAllGone(mesh.tree, mesh.port, run);
  }, 60_000);

  test("kill -9 of the launcher: the supervisor notices its parent is gone and stops the mesh", async () => {
    using dir = tempDir();
    const run = join(dir.path, "run");
    const mesh = await startMesh(["node", LAUNCHER, "up", meshFile(dir.path, "orphan"), "--dir", run, "--port", "0", "--quiet"], dir.path);
    mesh.proc.kill("SIGKILL");
    await mesh.proc.exited;
    await expectAllGone(mesh.tree, mesh.port, run);
  }, 60_000);

  test("SIGTERM to `npm start` stops the whole mesh (npm's shell does not pass it on)", async () => {
    using dir = tempDir();
    const run = join(dir.path, "run");
    const start = `${BUN} ${CLI} up ${meshFile(dir.path, "npm")} --dir ${run} --port 0 --quiet`;
    writeFileSync(join(dir.path, "package.json"), JSON.stringify({ name: "npm-start-probe", version: "1.0.0", private: true, scripts: { start } }));
    const mesh = await startMesh(["npm", "start", "--silent"], dir.path);
    mesh.proc.kill("SIGTERM");
    await mesh.proc.exited;
    await expectAllGone(mesh.tree, mesh.port, run);
  }, 60_000);
});
