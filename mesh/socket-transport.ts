import { chmodSync, lstatSync, mkdirSync, statSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import { ErrorCode, HermesError } from "./errors.ts";
import { AccessMode, connectRefused, isPermissionError, setAccess, socketGroupFor } from "./socket-access.ts";
import { Buffer } from "node:buffer";
import { createServer, connect as netConnect, type Socket } from "node:net";
import { Connection, type ByteStream } from "./connection.ts";
import type { ConnectionOptions } from "./handshake.ts";
import type { MeshTransport } from "./transport.ts";

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
  mkdirSync(dir, { recursive: true, mode: AccessMode.PRIVATE_DIR });
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
  const answers = await socketAnswers(path);
  if (answers === "refused") {
    // Somebody else's socket (another user's, in a shared clients/ directory): never ours to replace.
    throw new HermesError(ErrorCode.UNAVAILABLE, `${path} is a socket this process may not connect to (another user's); refusing to replace it`, { path });
  }
  if (answers) {
    throw new HermesError(ErrorCode.UNAVAILABLE, `${path} is in use by a live process`, { path, retry_after_ms: 1000 });
  }
  unlinkSync(path);
}

/**
 * Binds with a umask that makes the socket file 0600 from the start (no window in which
 * others could connect), then sets the mode explicitly in case the platform ignored the umask.
 * Deno lets a process set its umask only with the whole of --allow-sys; without it the mode is
 * set right after the bind, and the socket directory (0700, made by prepareSocketPath) keeps
 * everyone else out meanwhile.
 */
export function withPrivateUmask<T>(path: string, bind: () => T): T {
  let previous: number | undefined;
  try {
    previous = process.umask(0o177);
  } catch {
    // Not allowed (Deno without --allow-sys): chmod below.
  }
  try {
    return bind();
  } finally {
    if (previous !== undefined) process.umask(previous);
    try {
      chmodSync(path, AccessMode.PRIVATE_FILE);
    } catch {
      // The listener failed to bind; its error is the one worth reporting.
    }
  }
}

/**
 * Gives a bound socket file its final mode: 0600, or 0660 with the group when the socket is for
 * one (`mesh.socket_group`; by default the group {@link socketGroupFor} finds for the path).
 * Bound private first (withPrivateUmask), it is opened to the group only once the group is set.
 *
 * @example
 * await prepareSocketPath(path);
 * const server = withPrivateUmask(path, () => Bun.serve({ unix: path, fetch }));
 * setSocketMode(path);
 */
export function setSocketMode(path: string, group: number | undefined = socketGroupFor(path)): void {
  if (group === undefined) setAccess(path, AccessMode.PRIVATE_FILE);
  else setAccess(path, AccessMode.SHARED_SOCKET, group);
}

/** Removes a socket file we created, ignoring one that is already gone. */
export function removeSocketFile(path: string): void {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/** Whether a live process answers at `path`, or "refused" when this process may not connect there. */
async function socketAnswers(path: string): Promise<boolean | "refused"> {
  try {
    const stream = await socketRuntime().connect({ path }, () => ({ handleData() {}, handleDrain() {}, handleClose() {} }));
    stream.end();
    return true;
  } catch (error) {
    return isPermissionError(error) ? "refused" : false;
  }
}

// ---- the socket adapter: the only place that knows which runtime's sockets are in use ----

/** What the owner of a stream is told (a Connection is one: its methods are called directly). */
export interface StreamEvents {
  handleData(chunk: Uint8Array): void;
  /** The stream has room again after a short write. */
  handleDrain(): void;
  handleClose(error?: Error): void;
}

/** A listening socket of some runtime. */
export interface SocketServer {
  /** The TCP port bound (useful with port 0). */
  readonly port: number | undefined;
  /** Stops accepting; with `force`, also drops the connections still open. */
  stop(force: boolean): void;
}

/**
 * Listening and dialing byte streams on Unix sockets and TCP. Two implementations: Bun's
 * (Bun.listen / Bun.connect, the fast path) and node:net (which Deno provides too). Chosen by
 * {@link socketRuntime}.
 */
export interface SocketRuntime {
  readonly name: "bun" | "node";
  /** Resolves once bound (Bun binds at once; node:net on Deno binds TCP after the call returns). */
  listen(address: Address, onOpen: (stream: ByteStream) => StreamEvents): SocketServer | Promise<SocketServer>;
  connect(address: Address, onOpen: (stream: ByteStream) => StreamEvents): Promise<ByteStream>;
}

const bunSockets: SocketRuntime = {
  name: "bun",
  listen(address, onOpen) {
    const server = Bun.listen<BunSocketData>({ ...bunTarget(address), socket: bunHandlers(onOpen) } as Parameters<typeof Bun.listen<BunSocketData>>[0]);
    return { port: "port" in server ? (server as { port: number }).port : undefined, stop: (force) => server.stop(force) };
  },
  async connect(address, onOpen) {
    return await Bun.connect<BunSocketData>({ ...bunTarget(address), socket: bunHandlers(onOpen) } as Parameters<typeof Bun.connect<BunSocketData>>[0]);
  },
};

type BunSocketData = { events?: StreamEvents };

function bunTarget(address: Address): { unix: string } | { hostname: string; port: number } {
  return "path" in address ? { unix: address.path } : { hostname: address.host, port: address.port };
}

function bunHandlers(onOpen: (stream: ByteStream) => StreamEvents) {
  type S = { data: BunSocketData; end(): void };
  return {
    open(socket: S & ByteStream) {
      socket.data = { events: onOpen(socket) };
    },
    data: (socket: S, chunk: Uint8Array) => socket.data.events?.handleData(chunk),
    drain: (socket: S) => socket.data.events?.handleDrain(),
    close: (socket: S, error?: Error) => socket.data.events?.handleClose(error),
    error: (socket: S, error: Error) => socket.data?.events?.handleClose(error),
    end: (socket: S) => socket.end(),
  };
}

/**
 * node:net behind the same contract. Node keeps a reference to what it is given until it is
 * flushed while the write queue reuses its buffer, so each write is copied; a full socket
 * (writableNeedDrain) takes nothing, and 'drain' resumes the queue.
 */
const nodeSockets: SocketRuntime = {
  name: "node",
  listen(address, onOpen) {
    const open = new Set<Socket>();
    const server = createServer((socket) => {
      open.add(socket);
      socket.on("close", () => open.delete(socket));
      wireNodeSocket(socket, onOpen);
    });
    // 'listening' before the port is known (Deno binds TCP asynchronously); a bind error
    // (EADDRINUSE) rejects instead of being an unhandled 'error' event.
    const bound = new Promise<SocketServer>((resolve, reject) => {
      server.once("error", reject);
      server.once("listening", () => {
        server.off("error", reject);
        resolve({
          get port() {
            const bound = server.address();
            return typeof bound === "object" && bound ? bound.port : undefined;
          },
          stop(force) {
            server.close();
            if (force) for (const socket of open) socket.destroy();
          },
        });
      });
    });
    if ("path" in address) server.listen(address.path);
    else server.listen(address.port, address.host);
    return bound;
  },
  connect(address, onOpen) {
    return new Promise((resolve, reject) => {
      const socket = "path" in address ? netConnect({ path: address.path }) : netConnect({ host: address.host, port: address.port });
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        resolve(wireNodeSocket(socket, onOpen));
      });
    });
  },
};

function wireNodeSocket(socket: Socket, onOpen: (stream: ByteStream) => StreamEvents): ByteStream {
  socket.setNoDelay?.(true);
  const stream: ByteStream = {
    write(data, offset, length) {
      if (socket.destroyed || socket.writableNeedDrain) return 0;
      socket.write(Buffer.from(data.subarray(offset, offset + length)));
      return length;
    },
    end: () => socket.end(),
    terminate: () => socket.destroy(),
  };
  const events = onOpen(stream);
  let failure: Error | undefined;
  socket.on("data", (chunk: Buffer) => events.handleData(chunk));
  socket.on("drain", () => events.handleDrain());
  socket.on("error", (error) => (failure = error));
  socket.on("end", () => socket.end());
  socket.on("close", () => events.handleClose(failure));
  return stream;
}

/**
 * The sockets in use: Bun's when running on Bun, node:net elsewhere (Deno) or when
 * HERMES_SOCKET_RUNTIME=node asks for it (the conformance suite runs both).
 */
export function socketRuntime(): SocketRuntime {
  if (process.env.HERMES_SOCKET_RUNTIME === "node") return nodeSockets;
  return typeof Bun === "undefined" ? nodeSockets : bunSockets;
}

// ---- listen and dial: Connections over the socket runtime ----

/** What a listener does with each connection once its handshake is done. */
export interface ListenOptions extends ConnectionOptions {
  /** Called for every connection that completed its hello. */
  onConnection: (connection: Connection) => void;
  /** Refuse connections beyond this many at once. Default 4096. */
  maxConnections?: number;
  /** Called when a peer's hello is refused (wrong protocol version, token, codecs): the refused side's log says why too. */
  onRefused?: (error: HermesError) => void;
  /**
   * The gid a Unix socket is shared with (mode 0660), or null for a private one (0600).
   * Default: the group {@link socketGroupFor} finds for its path (`mesh.socket_group`).
   */
  socketGroup?: number | null;
}

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
  #server: SocketServer | undefined;
  #closed = false;

  /** @internal use {@link listen} */
  constructor(address: Address) {
    this.address = address;
  }

  /** @internal */
  bind(server: SocketServer): void {
    this.#server = server;
    if (!("path" in this.address) && server.port !== undefined) (this as { address: Address }).address = { host: this.address.host, port: server.port };
  }

  /** Stops listening, closes every connection cleanly and removes the socket file. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#server?.stop(false);
    await Promise.all([...this.connections].map((c) => c.close()));
    this.#server?.stop(true);
    if ("path" in this.address) removeSocketFile(this.address.path);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}


/**
 * Starts listening on a Unix socket path (made 0600, or 0660 with the mesh's socket group;
 * directory 0700 when it is made here; stale file replaced) or a TCP port.
 */
export async function listen(address: Address, options: ListenOptions): Promise<Listener> {
  const maxConnections = options.maxConnections ?? 4096;
  const listener = new Listener(address);
  const onOpen = (stream: ByteStream): StreamEvents => {
    const connection = new Connection(stream, "acceptor", options);
    if (listener.connections.size >= maxConnections) {
      connection.destroy(new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "too many connections", { resource: "connections", limit: maxConnections }));
      stream.end();
      return connection;
    }
    listener.connections.add(connection);
    connection.closed.then(() => listener.connections.delete(connection));
    connection.ready.then(() => options.onConnection(connection), (error) => options.onRefused?.(HermesError.from(error)));
    return connection;
  };
  const sockets = socketRuntime();
  if ("path" in address) {
    const group = options.socketGroup === undefined ? socketGroupFor(address.path) : (options.socketGroup ?? undefined);
    await prepareSocketPath(address.path);
    listener.bind(await withPrivateUmask(address.path, () => sockets.listen(address, onOpen)));
    // node:net may finish binding after listen() returns: the mode is set (again) once it has.
    try {
      setSocketMode(address.path, group);
    } catch (error) {
      await listener.close();
      throw error;
    }
  } else {
    listener.bind(await sockets.listen(address, onOpen));
  }
  return listener;
}

/**
 * Connects to a listener and completes the hello handshake. Rejects with code 10 when nothing
 * listens there, with code 5 (`auth_method: "unix_permissions"`) when the socket's or a
 * directory's mode does not let this user connect (the message says whose it is, its mode,
 * and which setting would allow it), or with the peer's coded refusal (5 for a wrong token).
 */
export async function dial(address: Address, options: ConnectionOptions): Promise<Connection> {
  let connection: Connection | undefined;
  try {
    await socketRuntime().connect(address, (stream) => (connection = new Connection(stream, "dialer", options)));
  } catch (error) {
    // Both adapters report errno codes (EACCES, ENOENT, ECONNREFUSED); Bun's message is only
    // "Failed to connect", so the code is added where the message lacks it.
    if ("path" in address && isPermissionError(error)) throw connectRefused(address.path, error);
    const { message, code } = error as NodeJS.ErrnoException;
    throw new HermesError(ErrorCode.UNAVAILABLE, `cannot connect to ${formatAddress(address)}: ${message}${code && !message.includes(code) ? ` (${code})` : ""}`, {
      retry_after_ms: 100,
    }, { cause: error });
  }
  if (!connection) throw new HermesError(ErrorCode.UNAVAILABLE, `connection to ${formatAddress(address)} did not open`);
  await connection.ready;
  return connection;
}

/**
 * The byte-stream transport as a MeshTransport: endpoints are socket paths (or `tcp://host:port`),
 * links are Connections.
 *
 * @example
 * const link = await socketTransport.dial("/tmp/hermes-mesh-demo/echo.0.sock", { node: "client" });
 */
export const socketTransport: MeshTransport = {
  name: "socket",
  listen: async (endpoint, options) => {
    const listener = await listen(parseAddress(endpoint), { ...options, onConnection: options.onLink });
    return { endpoint: formatAddress(listener.address), close: () => listener.close() };
  },
  dial: (endpoint, options) => dial(parseAddress(endpoint), options),
};
