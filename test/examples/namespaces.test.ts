/**
 * The single-host multi-container deployment of docs/containers.md, simulated without Docker
 * (issue 16 item 5): a core mesh in this process (supervisor and an echo actor, `socket_group`
 * set to a group made for the run, the mesh token from `token_env`), and an "agent container":
 * `hermes-mesh actor` (src/cli/main.ts on this same Bun binary) in namespaces of its own, as a
 * user made for the run who is in that group.
 *
 * What the agent is isolated from, and how (util-linux `unshare`, then `chroot` and `setpriv`):
 * - **Mount namespace, own root.** `unshare --mount` (propagation private: nothing it mounts is
 *   seen by the host), then a tmpfs as its root, entered with chroot. In it, as in an image and a
 *   volume: /usr read-only (the OS; /bin, /lib, /lib64, /sbin as the same symlinks), the Bun
 *   binary read-only at /bun, this repository read-only at /app (the package), copies of
 *   /etc/passwd and /etc/group, a /dev of its own with null, zero, random and urandom bound in,
 *   an empty private /tmp, a /proc of its PID namespace, and **the mesh directory**, bound
 *   read-write at the same path as on the host, the only thing the host and the agent share.
 *   The directory around the mesh directory (this test's temp dir, with the mesh file), the rest
 *   of /tmp, /work and /home are not there: the probe below asserts it.
 * - **PID namespace.** `--pid --fork --mount-proc`: `hermes-mesh actor` is pid 1 there (sh
 *   execs chroot, setpriv and Bun in turn); this process is invisible to it and it reports pid 1
 *   to the mesh. The test kills it by its host pid, found from unshare's child.
 * - **Network, UTS and IPC namespaces.** `--net` (only a loopback interface, down), `--uts`
 *   (hostname `agent`), `--ipc`: the Unix sockets on the shared directory are its only way in.
 * - **User and groups.** Not a user namespace: a real uid, as a container without userns
 *   remapping runs. setpriv drops root for that uid with group nogroup and its supplementary
 *   groups from the copied /etc/group (--init-groups), so it reaches the mesh through the group
 *   alone; --no-new-privs.
 * Not isolated: the cgroup, time and user namespaces, and the kernel (as in any container).
 *
 * Checked: the agent registers as external; a request from the core side (a connectMesh client
 * here, with the token) reaches it and it answers, after calling the core's echo actor itself;
 * the pid it reports is its pid inside its namespace (1), not its host pid, and nothing depends
 * on it (it is killed by its host pid, restarted, and answers); killed with SIGKILL, the
 * requests sent while it is down are answered, none lost, by its next start in a fresh set of
 * namespaces; when the mesh stops, the agent exits by itself with status 1. It needs root,
 * unshare and user creation, and is skipped (saying why) without.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { spansPathOf } from "../../src/observability/event-log.ts";
import { readEvents } from "../../src/observability/event-log-reader.ts";
import { join } from "node:path";
import { connectMesh } from "../../src/actor/connect-mesh.ts";
import { startTestMesh } from "../actor/mesh-harness.ts";
import { BUN, createTestGroup, tempDir, waitFor, type TestGroup } from "../helpers.ts";

const REPO = join(import.meta.dir, "../..");
const AGENT_MODULE = "/app/test/examples/namespace-agent-fixture.ts";
const NAME = "agent";

const tools = Object.fromEntries(["unshare", "setpriv", "chroot", "mount", "useradd", "groupadd", "userdel", "groupdel"].map((t) => [t, Bun.which(t)]));
const NAMESPACES = ["--mount", "--pid", "--net", "--uts", "--ipc", "--fork", "--mount-proc", "--propagation", "private"];

function whyNot(): string | undefined {
  if (process.getuid?.() !== 0) return "not running as root: cannot create namespaces, test users or mounts";
  const missing = Object.entries(tools).filter(([, path]) => !path).map(([name]) => name);
  if (missing.length > 0) return `not found: ${missing.join(", ")}`;
  const probe = Bun.spawnSync([tools.unshare!, ...NAMESPACES, "true"], { stdout: "ignore", stderr: "pipe" });
  if (probe.exitCode !== 0) return `unshare refused namespaces here: ${probe.stderr.toString().trim()}`;
  return undefined;
}
const SKIP = whyNot();
if (SKIP) console.warn(`namespaces.test.ts: skipped: ${SKIP}`);

const suffix = `${process.pid.toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`.slice(0, 10);
const GROUP = `hmns${suffix}`;
const USER = `hmnsu${suffix}`;
let uid = -1;
let gid = -1;

let group: TestGroup | undefined;

beforeAll(() => {
  if (SKIP) return;
  group = createTestGroup(GROUP);
  gid = group.gid;
  uid = group.addUser(USER, true).uid;
});

afterAll(() => group?.remove());

/**
 * Run by sh as pid 1 of the new namespaces, still root: builds the agent's root on a tmpfs at
 * $1 (the mesh directory $2 bound at the same path, the repository $3 and the Bun binary $4
 * read-only), then becomes uid $5 in it and execs the rest of the arguments.
 */
const LAUNCH = String.raw`set -eu
root=$1 mesh=$2 app=$3 bun=$4 uid=$5
shift 5
umask 022
ro_bind() { mount --bind "$1" "$2"; mount -o remount,bind,ro "$2"; }
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$root"
mkdir "$root/usr" "$root/etc" "$root/proc" "$root/dev" "$root/tmp" "$root/app"
ro_bind /usr "$root/usr"
for top in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$top" ]; then ln -s "$(readlink "/$top")" "$root/$top"
  elif [ -d "/$top" ]; then mkdir "$root/$top"; ro_bind "/$top" "$root/$top"; fi
done
touch "$root/bun"
ro_bind "$bun" "$root/bun"
ro_bind "$app" "$root/app"
cp /etc/passwd /etc/group "$root/etc/"
printf 'passwd: files\ngroup: files\n' > "$root/etc/nsswitch.conf"
mount -t tmpfs -o mode=0755,nosuid tmpfs "$root/dev"
for device in null zero random urandom; do touch "$root/dev/$device"; mount --bind "/dev/$device" "$root/dev/$device"; done
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/tmp"
mkdir -p "$root$mesh"
mount --bind "$mesh" "$root$mesh"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
hostname agent
exec chroot "$root" /usr/bin/setpriv --reuid="$uid" --regid=nogroup --init-groups --no-new-privs -- "$@"`;

/** What the agent's view holds, printed from inside it as key=value lines. */
const PROBE = String.raw`echo "pid=$$"
echo "root=$(ls -A / | tr '\n' ' ')"
echo "tmp=$(ls -A /tmp | tr '\n' ' ')"
echo "around_mesh=$(ls -A "$(dirname "$MESH")" | tr '\n' ' ')"
echo "mesh_visible=$(test -S "$MESH/supervisor.sock" && echo yes || echo no)"
echo "work=$(test -e /work && echo visible || echo absent)"
echo "home=$(test -e /home && echo visible || echo absent)"
echo "test_process=$(test -e "/proc/$HOST_PID" && echo visible || echo absent)"
echo "hostname=$(hostname)"
echo "interfaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
echo "uid=$(id -u)"
echo "groups=$(id -G)"
echo "app=$(touch /app/.probe 2>/dev/null && echo writable || echo read-only)"
echo "mesh_dir=$(touch "$MESH/.probe" 2>/dev/null && echo writable || echo not-writable)"`;

/** The pids whose parent is `pid`, from /proc. */
function childrenOf(pid: number): number[] {
  return readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map(Number).filter((p) => {
    try {
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
    } catch {
      return false; // gone meanwhile
    }
  });
}

/** The pid a process has in its own PID namespace: the last field of NSpid in /proc/<pid>/status. */
function namespacePid(hostPid: number): number {
  const line = readFileSync(`/proc/${hostPid}/status`, "utf8").split("\n").find((l) => l.startsWith("NSpid:"))!;
  return Number(line.trim().split(/\s+/).at(-1));
}

/**
 * One "container": `command` run by LAUNCH in fresh namespaces with the view at `view`. Its host
 * pid is unshare's forked child (pid 1 inside); dispose kills that child (which ends everything
 * in its PID namespace and, with it, its mounts) until unshare has exited.
 */
function container(view: string, meshDir: string, command: string[], env: Record<string, string>) {
  const proc = Bun.spawn([tools.unshare!, ...NAMESPACES, "/bin/sh", "-c", LAUNCH, "agent-container", view, meshDir, REPO, BUN, String(uid), ...command], {
    env: { PATH: "/usr/bin:/bin:/usr/sbin:/sbin", HOME: "/nonexistent", BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const output = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]).then(([out, err]) => out + err);
  const ended = () => proc.exitCode !== null || proc.signalCode !== null;
  return {
    proc,
    output,
    /** The host pid of the namespace's pid 1. */
    async hostPid(): Promise<number> {
      let child: number | undefined;
      await waitFor(() => (child = childrenOf(proc.pid)[0]) !== undefined || ended(), "unshare's child", 10_000);
      if (child === undefined) throw new Error(`unshare exited (${proc.exitCode}) before forking: ${await output}`);
      return child;
    },
    async [Symbol.asyncDispose]() {
      // A child forked between two scans is caught by the next one: unshare exits only after it.
      await waitFor(() => {
        for (const child of childrenOf(proc.pid)) process.kill(child, "SIGKILL");
        return ended();
      }, "the container's processes gone", 10_000).catch(() => proc.kill("SIGKILL"));
      await proc.exited;
    },
  };
}

const MESH = `
mesh: { name: nsmesh, token_env: HM_NS_TOKEN, socket_group: ${GROUP} }
supervisor:
  children:
    - { actor: echo, module: "{ACTORS}/echo.ts" }
`;

describe("an agent container simulated with namespaces", () => {
  test.skipIf(Boolean(SKIP))(`in its own mount, PID, network and UTS namespaces, as another user in the mesh's group, it serves the core and loses nothing across kill -9${SKIP ? ` (skipped: ${SKIP})` : ""}`, async () => {
    const token = `t-${crypto.randomUUID()}`;
    process.env.HM_NS_TOKEN = token;
    // Mounted over only inside the agents' mount namespaces: on the host it stays an empty directory.
    using view = tempDir("hm-ns-view-");
    using _unmount = {
      // Nothing should be mounted there on the host; if something is, it does not outlive the test.
      [Symbol.dispose]: () => {
        if (readFileSync("/proc/self/mountinfo", "utf8").includes(view.path)) Bun.spawnSync(["umount", "-l", view.path]);
      },
    };
    await using t = await startTestMesh(MESH);
    const client = await connectMesh({ dir: t.dir, name: "core-side", token });
    try {
      const agentEnv = { HERMES_MESH_TOKEN: token };
      // Durable, with its event log: both in the shared directory, as another user.
      const agentCommand = ["/bun", "/app/src/cli/main.ts", "actor", AGENT_MODULE, "--dir", t.dir, "--name", NAME, "--durable"];

      // What the container sees: only the mesh directory of the host's temp tree, its own pids, hostname and network.
      {
        await using probe = container(view.path, t.dir, ["/bin/sh", "-c", PROBE], { MESH: t.dir, HOST_PID: String(process.pid) });
        const code = await probe.proc.exited;
        const said = await probe.output;
        expect({ code, said }).toMatchObject({ code: 0 });
        const facts = Object.fromEntries(said.trim().split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()]));
        // The mesh directory's path exists there only as the directories leading to it.
        const [top, second] = t.dir.split("/").slice(1);
        const tops = ["bin", "sbin", "lib", "lib32", "lib64", "libx32"].filter((n) => existsSync(`/${n}`));
        expect(facts).toEqual({
          pid: "1",
          root: [...new Set(["app", "bun", "dev", "etc", "proc", "tmp", "usr", ...tops, top!])].sort().join(" "),
          tmp: top === "tmp" ? second : "",
          around_mesh: "run",
          mesh_visible: "yes",
          work: "absent",
          home: "absent",
          test_process: "absent",
          hostname: "agent",
          interfaces: "lo",
          uid: String(uid),
          groups: `65534 ${gid}`,
          app: "read-only",
          // The group enters the mesh directory and connects; it may not create there (2750).
          mesh_dir: "not-writable",
        });
        expect(existsSync(join(t.dir, ".probe"))).toBe(false);
      }

      const entry = () => t.mesh.registry.byAddress(NAME);
      let stale: string;
      {
        await using first = container(view.path, t.dir, agentCommand, agentEnv);
        const hostPid = await first.hostPid();
        await waitFor(async () => {
          if (entry()?.health === "healthy") return true;
          if (first.proc.exitCode === null) return false;
          const said = await first.output;
          const hint = said.includes("Failed to listen")
            ? "\n(the agent, another user, may not create its socket in the mesh directory, which is 2750 with socket_group: see docs/containers.md)"
            : "";
          throw new Error(`the agent exited (${first.proc.exitCode}) before it was healthy: ${said}${hint}`);
        }, "the agent healthy", 30_000);
        expect(entry()).toMatchObject({ external: true, kind: "actor", health: "healthy", capabilities: ["ns.who"] });

        // Core → agent, and the agent → the core's echo actor, through the shared directory only.
        const reply = await client.request(NAME, { i: -1, call: "echo" }, { timeoutMs: 10_000 });
        expect(reply.payload).toMatchObject({ i: -1, uid, hostname: "agent", answer: { from: NAME } });
        expect(reply.payload.groups).toContain(gid);
        expect(reply.payload.groups).not.toContain(0);
        // By capability, as the core's other members would find it.
        expect((await client.request({ capability: "ns.who" }, { i: -2 }, { timeoutMs: 10_000 })).payload.i).toBe(-2);

        // Its pid is the one in its namespace: 1, what it reported and the registry shows, not its host pid.
        expect(namespacePid(hostPid)).toBe(1);
        expect(reply.payload.pid).toBe(1);
        expect(entry()!.pid).toBe(1);
        expect(hostPid).not.toBe(1);
        expect(entry()!.pid).not.toBe(hostPid);

        // Its socket is its own file in the shared directory, open to the group.
        stale = entry()!.socket;
        const socket = statSync(stale);
        expect({ uid: socket.uid, gid: socket.gid, mode: (socket.mode & 0o7777).toString(8) }).toEqual({ uid, gid, mode: "660" });
        // Its durable store is its alone; its event log the group reads (the gateway's trace view), and it holds what it handled.
        const owned = (path: string) => {
          const stat = statSync(path);
          return { uid: stat.uid, gid: stat.gid, mode: (stat.mode & 0o7777).toString(8) };
        };
        expect(owned(join(t.dir, "data", `${NAME}.db`))).toEqual({ uid, gid, mode: "600" });
        const eventLog = join(t.dir, "logs", `${NAME}.jsonl`);
        await waitFor(() => existsSync(eventLog) && readEvents(eventLog).some((e) => e.event === "handled"), "the agent's event log written", 10_000);
        expect(owned(eventLog)).toEqual({ uid, gid, mode: "640" });
        expect(owned(spansPathOf(eventLog))).toEqual({ uid, gid, mode: "640" });

        // kill -9 by its host pid: its PID namespace, and with it its mount namespace, end.
        process.kill(hostPid, "SIGKILL");
        await first.proc.exited;
      }
      await waitFor(() => entry()?.health === "down", "the agent seen down", 10_000);
      expect(existsSync(stale)).toBe(true); // a stale socket, found stale by connecting, not by a pid

      // Sent while it is down: held by the sender, delivered when it registers again.
      const waiting = Array.from({ length: 20 }, (_, i) => client.request(NAME, { i }, { timeoutMs: 30_000 }));
      await using second = container(view.path, t.dir, agentCommand, agentEnv);
      const secondHostPid = await second.hostPid();
      const answers = await Promise.all(waiting);
      expect(answers.map((a) => a.payload.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(answers.every((a) => a.payload.pid === 1 && a.payload.uid === uid)).toBe(true);
      expect(namespacePid(secondHostPid)).toBe(1);
      // The same pid as before (1): nothing tells the two starts apart by pid, and nothing needs to.
      expect(entry()).toMatchObject({ health: "healthy", external: true, pid: 1, restarts: 1 });
      expect(t.mesh.registry.byAddress("echo")!.restarts).toBe(0);

      // The mesh stops: the agent exits by itself (its control connection ended), status 1, for
      // its container runtime to restart; nothing signalled it.
      await t.mesh.stop();
      expect(await second.proc.exited).toBe(1);
      expect(await second.output).toContain("supervisor connection lost: exiting");
    } finally {
      await client.close();
      delete process.env.HM_NS_TOKEN;
    }
    // The agents' mounts were theirs alone.
    expect(readFileSync("/proc/self/mountinfo", "utf8").includes(view.path)).toBe(false);
  }, 90_000);
});
