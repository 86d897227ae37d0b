import { chmodSync, lstatSync, mkdirSync, statSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import { ErrorCode, HermesError } from "./errors.ts";
import type { Socket, SocketHandler, TCPSocketListener, UnixSocketListener } from "bun";
import { Connection, type ConnectionOptions } from "./connection.ts";

/** Where a listener listens or a dialer dials: a Unix socket path (default) or TCP. */
export type Address = { path: string } | { host: string; port: number };

/**
 * Parses `unix:/run/mesh/echo.sock`, `/run/mesh/echo.sock`, `tcp://127.0.0.1:7000` or
 * `127.0.0.1:7000` into an Address.
 *
 * @example
 * parseAddress("tcp://127.0.0.1:7000"); // { host: "127.0.0.1", port: 7000 }
 */
export function parseAddress(text: string): Address {
  if (text.startsWith("unix:")) return { path: text.slice(5) };
  const tcp = /^(?:tcp:\/\/)?(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(text);
  if (tcp && !text.startsWith("/") && !text.startsWith(".")) return { host: tcp[1]!.replace(/^\[|\]$/g, ""), port: Number(tcp[2]) };
  return { path: text };
}

/** A human-readable form of an address, as parseAddress accepts it. */
export function formatAddress(address: Address): string {
  return "path" in address ? `unix:${address.path}` : `tcp://${address.host}:${address.port}`;
}

/**
 * Makes `path` ready to listen on: creates its directory with mode 0700 when missing, and
 * removes a stale socket file left by a dead process. A socket somebody still answers on is
 * never taken over, and a file that is not a socket is never deleted.
 */
export async function prepareSocketPath(path: string): Promise<void> {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!statSync(dir).isDirectory()) throw new HermesError(ErrorCode.INVALID_REQUEST, `${dir} is not a directory`);
  let stat;
  try {
    stat = lstatSync(path);
  } catch {
    return;
  }
  if (!stat.isSocket()) {
    throw new HermesError(ErrorCode.UNAVAILABLE, `${path} exists and is not a socket; refusing to replace it`, { path });
  }
  if (await socketAnswers(path)) {
    throw new HermesError(ErrorCode.UNAVAILABLE, `${path} is in use by a live process`, { path, retry_after_ms: 1000 });
  }
  unlinkSync(path);
}

/**
 * Binds with a umask that makes the socket file 0600 from the start (no window in which
 * others could connect), then sets the mode explicitly in case the platform ignored the umask.
 */
export function withPrivateUmask<T>(path: string, bind: () => T): T {
  const previous = process.umask(0o177);
  try {
    return bind();
  } finally {
    process.umask(previous);
    try {
      chmodSync(path, 0o600);
    } catch {
      // The listener failed to bind; its error is the one worth reporting.
    }
  }
}

/** Removes a socket file we created, ignoring one that is already gone. */
export function removeSocketFile(path: string): void {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch {
    // Already gone.
  }
}

async function socketAnswers(path: string): Promise<boolean> {
  try {
    const socket = await Bun.connect({ unix: path, socket: { data() {}, error() {} } });
    socket.end();
    return true;
  } catch {
    return false;
  }
}

/** What a listener does with each connection once its handshake is done. */
export interface ListenOptions extends ConnectionOptions {
  /** Called for every connection that completed its hello. */
  onConnection: (connection: Connection) => void;
  /** Refuse connections beyond this many at once. Default 4096. */
  maxConnections?: number;
}

type SocketData = { connection?: Connection };

/**
 * A listening endpoint (Unix socket by default, TCP behind the same interface).
 *
 * @example
 * await using listener = await listen({ path: "/tmp/mesh/echo.sock" }, {
 *   node: "echo",
 *   onConnection: (c) => { c.onEnvelope = (env, seq) => { ...; c.settle(seq); }; },
 * });
 */
export class Listener {
  readonly address: Address;
  readonly connections = new Set<Connection>();
  #server: UnixSocketListener<SocketData> | TCPSocketListener<SocketData>;
  #closed = false;

  /** @internal use {@link listen} */
  constructor(address: Address, server: UnixSocketListener<SocketData> | TCPSocketListener<SocketData>) {
    this.address = "path" in address ? address : { host: address.host, port: (server as TCPSocketListener<SocketData>).port };
    this.#server = server;
  }

  /** Stops listening, closes every connection cleanly and removes the socket file. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#server.stop(false);
    await Promise.all([...this.connections].map((c) => c.close()));
    this.#server.stop(true);
    if ("path" in this.address) removeSocketFile(this.address.path);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

function socketHandlers(
  role: "dialer" | "acceptor",
  options: ConnectionOptions,
  onOpen: (connection: Connection, socket: Socket<SocketData>) => void,
): SocketHandler<SocketData> {
  return {
    open(socket) {
      const connection = new Connection(socket, role, options);
      socket.data = { connection };
      onOpen(connection, socket);
    },
    data(socket, chunk) {
      socket.data.connection?.handleData(chunk);
    },
    drain(socket) {
      socket.data.connection?.handleDrain();
    },
    close(socket, error) {
      socket.data.connection?.handleClose(error);
    },
    error(socket, error) {
      socket.data?.connection?.handleClose(error);
    },
    end(socket) {
      socket.end();
    },
  };
}

/** Starts listening on a Unix socket path (made 0600, directory 0700, stale file replaced) or a TCP port. */
export async function listen(address: Address, options: ListenOptions): Promise<Listener> {
  const maxConnections = options.maxConnections ?? 4096;
  let listener: Listener | undefined;
  const handlers = socketHandlers("acceptor", options, (connection, socket) => {
    if (!listener || listener.connections.size >= maxConnections) {
      connection.destroy(new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "too many connections", { resource: "connections", limit: maxConnections }));
      socket.end();
      return;
    }
    const own = listener;
    own.connections.add(connection);
    connection.closed.then(() => own.connections.delete(connection));
    connection.ready.then(() => options.onConnection(connection), () => {});
  });
  if ("path" in address) {
    await prepareSocketPath(address.path);
    const server = withPrivateUmask(address.path, () => Bun.listen<SocketData>({ unix: address.path, socket: handlers }));
    listener = new Listener(address, server);
  } else {
    listener = new Listener(address, Bun.listen<SocketData>({ hostname: address.host, port: address.port, socket: handlers }));
  }
  return listener;
}

/**
 * Connects to a listener and completes the hello handshake. Rejects with code 10 when nothing
 * listens there, or with the peer's coded refusal (for example 5 for a wrong token).
 */
export async function dial(address: Address, options: ConnectionOptions): Promise<Connection> {
  let connection: Connection | undefined;
  const handlers = socketHandlers("dialer", options, (c) => (connection = c));
  try {
    if ("path" in address) await Bun.connect<SocketData>({ unix: address.path, socket: handlers });
    else await Bun.connect<SocketData>({ hostname: address.host, port: address.port, socket: handlers });
  } catch (error) {
    throw new HermesError(ErrorCode.UNAVAILABLE, `cannot connect to ${formatAddress(address)}: ${(error as Error).message}`, {
      retry_after_ms: 100,
    }, { cause: error });
  }
  if (!connection) throw new HermesError(ErrorCode.UNAVAILABLE, `connection to ${formatAddress(address)} did not open`);
  await connection.ready;
  return connection;
}
