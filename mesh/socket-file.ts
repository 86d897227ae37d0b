import { chmodSync, lstatSync, mkdirSync, statSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";

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
