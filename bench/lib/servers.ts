/**
 * Broker servers for the peers that need one (nats-server, redis-server): each session starts
 * its own instance on a free loopback port, pinned like the session's peer process, and stops
 * it when disposed. Like fixtures, every server is registered for the last-resort cleanup and
 * also dies when its stdin closes (WATCHDOG), so none outlives the harness, even one killed
 * with SIGKILL. A missing binary is not an error: the peer is skipped with a note.
 */
import { onExit } from "./cleanup.ts";
import { pinPrefix, type Placement } from "./placement.ts";

/** Where Debian installs daemons (/usr/sbin) is not on every user's PATH. */
const SEARCH_PATH = [process.env.PATH ?? "", "/usr/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/bin"].join(":");

/** Path of an executable, or null when it is not installed. */
export function findBinary(name: string): string | null {
  return Bun.which(name, { PATH: SEARCH_PATH });
}

/**
 * A peer's reason to be skipped when `binary` is missing, else undefined.
 *
 * @example
 * const unavailable = () => missingBinary("nats-server", "nats-server");
 */
export function missingBinary(binary: string, debianPackage: string): string | undefined {
  return findBinary(binary) ? undefined : `${binary} not found (Debian package ${debianPackage})`;
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

interface ServerKind {
  binary: string;
  scheme: string;
  /** Command-line arguments for a server on `port` with files (if any) in `dir`. */
  args(port: number, dir: string): string[];
  /** A log line saying the server accepts connections. */
  ready: RegExp;
}

const NATS: ServerKind = {
  binary: "nats-server",
  scheme: "nats",
  // Core NATS only: no JetStream (-js), no monitoring port, no cluster.
  args: (port) => ["-a", "127.0.0.1", "-p", String(port)],
  ready: /Server is ready/,
};

const REDIS: ServerKind = {
  binary: "redis-server",
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
export function startNatsServer(placement: Placement, dir: string): Promise<Server> {
  return startServer(NATS, placement, dir);
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
  const binary = findBinary(kind.binary);
  if (!binary) throw new Error(`${kind.binary} not found`);
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
