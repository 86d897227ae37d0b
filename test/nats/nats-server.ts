/**
 * Real nats-server processes for the NATS tests: one server with JetStream, or a cluster of
 * three on loopback (routes between them, JetStream replicated). Each has its own store in a
 * temporary directory, listens on a free port, and is killed (SIGKILL) and removed however the
 * test ends. CI installs nats-server from Debian (.ci/run); NATS_SERVER overrides the binary.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "../helpers.ts";

export const NATS_SERVER = process.env.NATS_SERVER ?? "nats-server";

/** A free TCP port on loopback (bound and released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** One running server. */
export interface NatsServer extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** kill -9 (a crash); `start()` brings it back on the same port and store. */
  kill(): Promise<void>;
  start(): Promise<void>;
  /** Removes its store (while killed): the next `start()` is a server that lost every stream. */
  wipe(): void;
}

/** A set of servers (one, or a cluster of three). */
export interface NatsServers extends AsyncDisposable {
  readonly servers: NatsServer[];
  /** Every server's URL, as a client's `servers` list. */
  readonly urls: string[];
}

/** Answers once the server accepts connections (its client port), or throws after `timeoutMs`. */
async function reachable(port: number, timeoutMs: number): Promise<void> {
  const { connect } = await import("node:net");
  await waitFor(
    () =>
      new Promise<boolean>((resolve) => {
        const socket = connect(port, "127.0.0.1");
        socket.once("connect", () => (socket.destroy(), resolve(true)));
        socket.once("error", () => resolve(false));
      }),
    `nats-server on port ${port}`,
    timeoutMs,
  );
}

/**
 * Starts `count` servers (1, or 3 for a cluster) with JetStream.
 *
 * @example
 * await using nats = await startNatsServers();
 * const mesh = `mesh: { name: m, transport: nats, nats: { servers: ["${nats.urls[0]}"] } }`;
 */
export async function startNatsServers(count: 1 | 3 = 1, options: { maxPayload?: number; token?: string } = {}): Promise<NatsServers> {
  const root = mkdtempSync(join(tmpdir(), "hm-nats-"));
  const ports = await Promise.all(Array.from({ length: count }, freePort));
  const clusterPorts = count > 1 ? await Promise.all(Array.from({ length: count }, freePort)) : [];
  const servers: NatsServer[] = [];
  const children = new Set<ChildProcess>();
  const cleanup = () => {
    for (const child of children) child.kill("SIGKILL");
  };
  process.once("exit", cleanup);
  for (let i = 0; i < count; i++) {
    const store = join(root, `s${i}`);
    const config = join(root, `s${i}.conf`);
    const cluster =
      count > 1
        ? `cluster { name: hm, listen: 127.0.0.1:${clusterPorts[i]}, routes: [${clusterPorts.filter((_, j) => j !== i).map((p) => `nats-route://127.0.0.1:${p}`).join(", ")}] }\n`
        : "";
    const limits = `${options.maxPayload ? `max_payload: ${options.maxPayload}\n` : ""}${options.token ? `authorization { token: "${options.token}" }\n` : ""}`;
    writeFileSync(config, `server_name: s${i}\nlisten: 127.0.0.1:${ports[i]}\njetstream { store_dir: "${store}" }\n${limits}${cluster}`);
    let child: ChildProcess | undefined;
    const server: NatsServer = {
      url: `nats://127.0.0.1:${ports[i]}`,
      port: ports[i]!,
      get pid() {
        return child?.pid ?? -1;
      },
      async start() {
        const started = spawn(NATS_SERVER, ["-c", config], { stdio: ["ignore", "ignore", "pipe"] });
        let stderr = "";
        started.stderr!.on("data", (chunk) => (stderr = (stderr + chunk).slice(-2000)));
        const failed = new Promise<never>((_, reject) => {
          started.once("error", (error) => reject(new Error(`cannot start ${NATS_SERVER}: ${error.message} (Debian: apt-get install nats-server)`)));
          started.once("exit", (code) => reject(new Error(`nats-server s${i} exited (${code}): ${stderr}`)));
        });
        failed.catch(() => {});
        child = started;
        children.add(started);
        started.once("exit", () => children.delete(started));
        await Promise.race([reachable(ports[i]!, 10_000), failed]);
      },
      wipe() {
        if (child && child.exitCode === null && child.signalCode === null) throw new Error("wipe() a killed server only");
        rmSync(store, { recursive: true, force: true });
      },
      async kill() {
        const running = child;
        if (!running || running.exitCode !== null || running.signalCode !== null) return;
        const exited = new Promise((resolve) => running.once("exit", resolve));
        running.kill("SIGKILL");
        await exited;
      },
      async [Symbol.asyncDispose]() {
        await server.kill();
      },
    };
    servers.push(server);
  }
  try {
    await Promise.all(servers.map((s) => s.start()));
  } catch (error) {
    cleanup();
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  return {
    servers,
    urls: servers.map((s) => s.url),
    async [Symbol.asyncDispose]() {
      await Promise.all(servers.map((s) => s.kill()));
      process.off("exit", cleanup);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
