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
