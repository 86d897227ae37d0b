/**
 * Sharing a mesh with other Unix users (`mesh.socket_group`): the modes and groups of the mesh's
 * directories and sockets, a member of the group joining from its own process, and the coded
 * error everyone else gets. The parts that run processes as other users create a group and two
 * users for the run (removed afterwards) and need root; they are skipped, saying so, without it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { clientsDir, controlSocketPath, meshInfoPath } from "../../mesh/control-protocol.ts";
import { ErrorCode } from "../../mesh/errors.ts";
import { listen } from "../../mesh/socket-transport.ts";
import { connectMesh } from "../../src/actor/connect-mesh.ts";
import { findDeno } from "../../src/supervisor/deno-runtime.ts";
import { startTestMesh } from "../actor/mesh-harness.ts";
import { BUN, createTestGroup, tempDir, type TestGroup } from "../helpers.ts";

const FIXTURE = join(import.meta.dir, "socket-group-fixture.ts");
const SETPRIV = Bun.which("setpriv");
const SKIP_USERS = process.getuid?.() !== 0
  ? "not running as root: cannot create test users or run processes as them"
  : !SETPRIV || !Bun.which("useradd") || !Bun.which("groupadd")
    ? "setpriv, useradd or groupadd not found"
    : undefined;
if (SKIP_USERS) console.warn(`socket-group.test.ts: the tests with other users are skipped: ${SKIP_USERS}`);

interface TestUser {
  name: string;
  uid: number;
}

const suffix = `${process.pid.toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`.slice(0, 10);
const GROUP = `hmsg${suffix}`;
/** In GROUP. */
const MEMBER: TestUser = { name: `hmsgm${suffix}`, uid: -1 };
/** Not in GROUP. */
const OUTSIDER: TestUser = { name: `hmsgo${suffix}`, uid: -1 };
let gid = -1;

let group: TestGroup | undefined;

beforeAll(() => {
  if (SKIP_USERS) return;
  group = createTestGroup(GROUP);
  gid = group.gid;
  Object.assign(MEMBER, group.addUser(MEMBER.name, true));
  Object.assign(OUTSIDER, group.addUser(OUTSIDER.name, false));
});

afterAll(() => group?.remove());

/** What the fixture said: its last result line, parsed. */
type Outcome = { kind: "joined"; reply: unknown; socket: string } | { kind: "connected" } | { kind: "failed"; code: number; message: string; fields: Record<string, unknown> };

/** The fixture, run as `user` with its own groups (setpriv --init-groups), a minimal environment, and stdin to hold it. */
function runAs(user: TestUser, command: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([SETPRIV!, `--reuid=${user.uid}`, "--regid=nogroup", "--init-groups", ...command], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0", ...env },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = new Response(proc.stderr).text();
  let seen = "";
  const outcome = (async (): Promise<Outcome> => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdout) {
      seen += decoder.decode(chunk, { stream: true });
      const line = seen.split("\n").find((l) => /^(joined|connected|failed)\b/.test(l));
      if (!line) continue;
      const [kind, json] = [line.split(" ", 1)[0]!, line.slice(line.indexOf(" ") + 1)];
      return kind === "connected" ? { kind } : ({ kind, ...JSON.parse(json) } as Outcome);
    }
    throw new Error(`the fixture ended without a result (exit ${await proc.exited}); stdout: ${seen}; stderr: ${await stderr}`);
  })();
  return {
    outcome,
    /** Lets a joined client leave; resolves with its exit code. */
    async finish() {
      proc.stdin.end();
      return await proc.exited;
    },
    async [Symbol.asyncDispose]() {
      proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

const modeOf = (path: string) => statSync(path).mode & 0o7777;
const ECHO_MESH = (extra: string) => `mesh:
  name: sg
  token_env: HM_SG_TOKEN
${extra}supervisor:
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
`;

/** Runs `body` with HM_SG_TOKEN set (the mesh reads its token from it), unset again afterwards. */
async function withToken<T>(body: (token: string) => Promise<T>): Promise<T> {
  const token = `t-${crypto.randomUUID()}`;
  process.env.HM_SG_TOKEN = token;
  try {
    return await body(token);
  } finally {
    delete process.env.HM_SG_TOKEN;
  }
}

describe("a mesh without socket_group (the default)", () => {
  test("the directory is 0700, every socket and mesh.json 0600", async () => {
    await withToken(async (token) => {
      await using mesh = await startTestMesh(ECHO_MESH(""));
      const dir = mesh.dir;
      expect(modeOf(dir)).toBe(0o700);
      expect(modeOf(controlSocketPath(dir))).toBe(0o600);
      expect(modeOf(join(dir, "echo.sock"))).toBe(0o600);
      expect(modeOf(meshInfoPath(dir))).toBe(0o600);
      // The owner's own client still gets in, and its socket is private too.
      const client = await connectMesh({ dir, token, name: "owner" });
      try {
        expect((await client.request("echo", { n: 1 }, { timeoutMs: 10_000 })).payload).toEqual({ n: 1 });
        expect(modeOf(join(clientsDir(dir), `${client.address}.sock`))).toBe(0o600);
      } finally {
        await client.close();
      }
    });
  }, 60_000);

  test.skipIf(Boolean(SKIP_USERS))(`another user is refused, told the owner, group and mode and which setting would let it in${SKIP_USERS ? ` (skipped: ${SKIP_USERS})` : ""}`, async () => {
    await withToken(async (token) => {
      await using mesh = await startTestMesh(ECHO_MESH(""));
      const dir = mesh.dir;
      chmodSync(dirname(dir), 0o711); // the test's temp dir: others may pass through to the mesh directory
      await using member = runAs(MEMBER, [BUN, FIXTURE, "client", dir], { HERMES_MESH_TOKEN: token });
      const outcome = await member.outcome;
      expect(outcome).toMatchObject({ kind: "failed", code: ErrorCode.AUTH_FAILED, fields: { auth_method: "unix_permissions", path: dir, mode: "0700" } });
      const { message } = outcome as { message: string };
      expect(message).toContain(`cannot connect to unix:${controlSocketPath(dir)}: permission denied (EACCES)`);
      expect(message).toContain(`the directory ${dir} is owned by root (uid 0), group root (gid 0), mode 0700`);
      expect(message).toContain(`you are ${MEMBER.name} (uid ${MEMBER.uid}), groups nogroup (65534), ${GROUP} (${gid})`);
      expect(message).toContain("ask the mesh's owner to set mesh.socket_group to a group you are in");
    });
  }, 60_000);
});

describe("a mesh with socket_group", () => {
  test.skipIf(Boolean(SKIP_USERS))(`its directories and sockets take the group; a member joins and asks an actor; others are told to join the group${SKIP_USERS ? ` (skipped: ${SKIP_USERS})` : ""}`, async () => {
    await withToken(async (token) => {
      await using mesh = await startTestMesh(ECHO_MESH(`  socket_group: ${GROUP}\n`), { gateway: { port: 0 } });
      const dir = mesh.dir;
      chmodSync(dirname(dir), 0o711);
      const expectShared = (path: string, mode: number) => {
        expect({ path, gid: statSync(path).gid, mode: modeOf(path).toString(8) }).toEqual({ path, gid, mode: mode.toString(8) });
      };
      // The group may enter the mesh directory and connect, not create there; clients/ is theirs to listen in.
      expectShared(dir, 0o2750);
      expectShared(clientsDir(dir), 0o3770);
      expectShared(controlSocketPath(dir), 0o660);
      expectShared(join(dir, "echo.sock"), 0o660);
      expectShared(mesh.mesh.gateway!.socket, 0o660);
      expectShared(meshInfoPath(dir), 0o640);

      {
        await using member = runAs(MEMBER, [BUN, FIXTURE, "client", dir], { HERMES_MESH_TOKEN: token });
        const outcome = await member.outcome;
        expect(outcome).toMatchObject({ kind: "joined", reply: { text: "from another user" } });
        // The member's own socket, for events to it: its file, the mesh's group, 0660.
        const socket = (outcome as { socket: string }).socket;
        expect({ uid: statSync(socket).uid, gid: statSync(socket).gid, mode: modeOf(socket).toString(8) }).toEqual({ uid: MEMBER.uid, gid, mode: "660" });
        expect(await member.finish()).toBe(0);
      }

      await using outsider = runAs(OUTSIDER, [BUN, FIXTURE, "client", dir], { HERMES_MESH_TOKEN: token });
      const refused = await outsider.outcome;
      expect(refused).toMatchObject({ kind: "failed", code: ErrorCode.AUTH_FAILED, fields: { auth_method: "unix_permissions", path: dir, group_gid: gid, mode: "2750" } });
      const { message } = refused as { message: string };
      expect(message).toContain(`the directory ${dir} is owned by root (uid 0), group ${GROUP} (gid ${gid}), mode 2750`);
      expect(message).toContain(`add your user to group ${GROUP} (for example \`usermod -aG ${GROUP} ${OUTSIDER.name}\``);

      // logs/ and data/ take the group (each member writes its own files there), sticky; what the owner's logs hold stays the owner's.
      const logs = join(dir, "logs");
      await mesh.mesh.stop();
      for (const shared of [logs, join(dir, "data")]) expect([shared, (modeOf(shared) & 0o7777).toString(8)]).toEqual([shared, "3770"]);
      const files = readdirSync(logs);
      expect(files).toContain("supervisor.jsonl");
      for (const file of files) expect([file, modeOf(join(logs, file)) & 0o077]).toEqual([file, 0]);
    });
  }, 60_000);
});

describe("a refused connect, from each socket adapter", () => {
  const adapters: Array<{ name: string; command: (args: string[]) => string[]; env: Record<string, string>; skip?: string }> = [
    { name: "Bun.connect", command: (args) => [BUN, FIXTURE, ...args], env: {} },
    { name: "node:net on Bun", command: (args) => [BUN, FIXTURE, ...args], env: { HERMES_SOCKET_RUNTIME: "node" } },
    {
      name: "node:net on Deno",
      command: (args) => [findDeno()!, "run", "--no-prompt", "--quiet", "--allow-read", "--allow-write", "--allow-env", "--allow-net", "--allow-sys=uid,gid", FIXTURE, ...args],
      env: {},
      ...(findDeno() === undefined && { skip: "no Deno binary" }),
    },
  ];
  for (const adapter of adapters) {
    const skip = SKIP_USERS ?? adapter.skip;
    test.skipIf(Boolean(skip))(`${adapter.name}: a private socket names its mode and the setting; a group's socket lets the group in${skip ? ` (skipped: ${skip})` : ""}`, async () => {
      using dir = tempDir("hm-sg-dial-");
      chmodSync(dir.path, 0o711);
      // Deno keeps its cache in DENO_DIR, which must be the user's.
      const denoDir = join(dir.path, "deno");
      mkdirSync(denoDir);
      const sockets = join(dir.path, "sockets");
      mkdirSync(sockets, { mode: 0o755 });
      chmodSync(sockets, 0o755);
      const env = { ...adapter.env, DENO_DIR: denoDir };
      await using _private = await listen({ path: join(sockets, "private.sock") }, { node: "t", onConnection() {} });
      await using _shared = await listen({ path: join(sockets, "shared.sock") }, { node: "t", onConnection() {}, socketGroup: gid });
      expect(modeOf(join(sockets, "shared.sock"))).toBe(0o660);
      expect(statSync(join(sockets, "shared.sock")).gid).toBe(gid);

      for (const [user, path] of [[OUTSIDER, join(sockets, "private.sock")], [OUTSIDER, join(sockets, "shared.sock")], [MEMBER, join(sockets, "shared.sock")]] as const) {
        chownSync(denoDir, user.uid, 65534);
        await using child = runAs(user, adapter.command(["dial", path]), env);
        const outcome = await child.outcome;
        if (user === MEMBER) {
          expect(outcome).toEqual({ kind: "connected" });
          continue;
        }
        expect(outcome).toMatchObject({ kind: "failed", code: ErrorCode.AUTH_FAILED, fields: { auth_method: "unix_permissions", errno: "EACCES", path } });
        const { message } = outcome as { message: string };
        if (path.endsWith("private.sock")) {
          expect(message).toContain("the socket is owned by root (uid 0), group root (gid 0), mode 0600");
          expect(message).toContain("ask the mesh's owner to set mesh.socket_group");
        } else {
          expect(message).toContain(`the socket is owned by root (uid 0), group ${GROUP} (gid ${gid}), mode 0660`);
          expect(message).toContain(`add your user to group ${GROUP}`);
        }
      }
    }, 120_000);
  }
});
