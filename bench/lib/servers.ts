/**
 * Broker servers for the peers that need one (nats-server, redis-server): each session starts
 * its own instance on a free loopback port, pinned like the session's peer process, and stops
 * it when disposed. Like fixtures, every server is registered for the last-resort cleanup and
 * also dies when its stdin closes (WATCHDOG), so none outlives the harness, even one killed
 * with SIGKILL. A missing binary is not an error: the peer is skipped with a line saying how to
 * install it.
 */
import { onExit } from "./cleanup.ts";
import { pinPrefix, type Placement } from "./placement.ts";

/** Where Debian installs daemons (/usr/sbin) is not on every user's PATH. */
const SEARCH_PATH = [process.env.PATH ?? "", "/usr/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/bin"].join(":");

/** A broker's program: its name, the Debian package that has it, and the variable naming another one. */
export interface ServerBinary {
  binary: string;
  debianPackage: string;
  /** e.g. HERMES_NATS_SERVER=/opt/nats/nats-server: used instead of a search, for a server installed elsewhere. */
  envVar: string;
}

export const NATS_SERVER: ServerBinary = { binary: "nats-server", debianPackage: "nats-server", envVar: "HERMES_NATS_SERVER" };
export const REDIS_SERVER: ServerBinary = { binary: "redis-server", debianPackage: "redis-server", envVar: "HERMES_REDIS_SERVER" };

/** Path of the server's executable ($envVar, else a search of PATH and the sbin folders), or null. */
export function findServer(server: ServerBinary, env: Record<string, string | undefined> = process.env): string | null {
  const chosen = env[server.envVar];
  if (chosen) return Bun.which(chosen);
  return Bun.which(server.binary, { PATH: SEARCH_PATH });
}

/**
 * A peer's reason to be skipped when its server is missing, saying how to install it; else undefined.
 *
 * @example
 * const unavailable = () => missingServer(NATS_SERVER);
 * // "nats-server not found on PATH (Debian/Ubuntu: apt-get install nats-server; or set HERMES_NATS_SERVER=/path/to/nats-server)"
 */
export function missingServer(server: ServerBinary, env: Record<string, string | undefined> = process.env): string | undefined {
  if (findServer(server, env)) return undefined;
  const chosen = env[server.envVar];
  if (chosen) return `${server.envVar}=${chosen} is not an executable file (unset it to search the PATH for ${server.binary})`;
  return `${server.binary} not found on PATH (Debian/Ubuntu: apt-get install ${server.debianPackage}; or set ${server.envVar}=/path/to/${server.binary})`;
}

/**
 * The server runs in place of a shell (`exec`, same pid) whose background reader kills it when
 * stdin reaches its end: the harness holds the only writer of that pipe, and the kernel closes
 * it however the harness ends. Servers have no such option of their own.
 */
const WATCHDOG = ["/bin/sh", "-c", 'exec 3<&0; (cat <&3 >/dev/null 2>&1; kill $$ 2>/dev/null) & exec "$@" 3<&- </dev/null', "sh"];

/** A running server on 127.0.0.1. */
export interface Server extends AsyncDisposable {
  readonly port: number;
  readonly pid: number;
  /** e.g. "nats://127.0.0.1:41234". */
  readonly url: string;
}

interface ServerKind extends ServerBinary {
  scheme: string;
  /** Command-line arguments for a server on `port` with files (if any) in `dir`. */
  args(port: number, dir: string): string[];
  /** A log line saying the server accepts connections. */
  ready: RegExp;
}

const NATS: ServerKind = {
  ...NATS_SERVER,
  scheme: "nats",
  // Core NATS only: no JetStream (-js), no monitoring port, no cluster.
  args: (port) => ["-a", "127.0.0.1", "-p", String(port)],
  ready: /Server is ready/,
};

const NATS_JETSTREAM: ServerKind = {
  ...NATS,
  // JetStream on, storing in the session's directory: what a mesh over NATS needs (docs/nats.md).
  args: (port, dir) => ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir],
};

const REDIS: ServerKind = {
  ...REDIS_SERVER,
  scheme: "redis",
  // No persistence: no RDB snapshots, no AOF; logs to stdout.
  args: (port, dir) => ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", "", "--daemonize", "no"],
  ready: /Ready to accept connections/,
};

/**
 * Starts a nats-server on a free loopback port.
 *
 * @example
 * await using server = await startNatsServer(SAME_CORE, dir);
 * const nc = await connect({ servers: server.url });
 */
export function startNatsServer(placement: Placement, dir: string, options: { jetstream?: boolean } = {}): Promise<Server> {
  return startServer(options.jetstream ? NATS_JETSTREAM : NATS, placement, dir);
}

/** Starts a redis-server without persistence on a free loopback port. */
export function startRedisServer(placement: Placement, dir: string): Promise<Server> {
  return startServer(REDIS, placement, dir);
}

/** A port the kernel just handed out; another process may take it first, so a failed start is retried. */
function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

async function startServer(kind: ServerKind, placement: Placement, dir: string, timeoutMs = 10_000): Promise<Server> {
  const binary = findServer(kind);
  if (!binary) throw new Error(missingServer(kind));
  let lastError: Error | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(kind, binary, freePort(), placement, dir, timeoutMs);
    } catch (error) {
      lastError = error as Error;
    }
  }
  throw lastError!;
}

async function startOnce(kind: ServerKind, binary: string, port: number, placement: Placement, dir: string, timeoutMs: number): Promise<Server> {
  const proc = Bun.spawn([...pinPrefix(placement), ...WATCHDOG, binary, ...kind.args(port, dir)], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  const forget = onExit(() => proc.kill("SIGKILL"));
  proc.exited.then(forget);
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill("SIGTERM");
    try {
      proc.stdin.end(); // and the watchdog has nothing left to wait for
    } catch {
      // Already closed.
    }
    const timer = setTimeout(() => proc.kill("SIGKILL"), 3000);
    await proc.exited;
    clearTimeout(timer);
  };
  let log = ""; // the latest few KB of output, for the ready line and for errors
  const { promise: ready, resolve, reject } = Promise.withResolvers<void>();
  // Both streams are read to the end: a full pipe would stall the server.
  for (const stream of [proc.stdout, proc.stderr]) {
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) {
        log = (log + decoder.decode(chunk, { stream: true })).slice(-4096);
        if (kind.ready.test(log)) resolve();
      }
    })();
  }
  proc.exited.then((code) => reject(new Error(`${kind.binary} exited (${code}) before it was ready: ${log.trim().slice(-500)}`)));
  const timer = setTimeout(() => reject(new Error(`${kind.binary} was not ready within ${timeoutMs} ms`)), timeoutMs);
  try {
    await ready;
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return { port, pid: proc.pid, url: `${kind.scheme}://127.0.0.1:${port}`, [Symbol.asyncDispose]: stop };
}
