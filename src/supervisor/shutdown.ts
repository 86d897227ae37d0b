/**
 * OTP's shutdown protocol for one child: ask politely, wait up to the child's shutdown time,
 * then kill; or kill at once for brutal_kill.
 */
import type { ChildHandle, ExitInfo } from "./child-spec.ts";

/**
 * Stops `handle` and resolves with its exit. `hurry` cuts the wait short (e.g. the supervisor
 * itself is being killed): when it resolves, the child is killed at once.
 *
 * @example
 * const exit = await terminate(handle, 5000); // SIGTERM, then SIGKILL after 5 s if still alive
 */
export async function terminate(
  handle: ChildHandle,
  shutdown: number | "brutal_kill",
  hurry?: Promise<void>,
): Promise<ExitInfo> {
  if (shutdown === "brutal_kill") {
    handle.kill();
    return handle.exited;
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const gone = handle.exited.then(() => true);
  const waits: Promise<boolean>[] = [gone];
  if (Number.isFinite(shutdown)) waits.push(new Promise((resolve) => (timer = setTimeout(resolve, shutdown, false))));
  if (hurry) waits.push(hurry.then(() => false));
  try {
    handle.stop();
    if (await Promise.race(waits)) return handle.exited;
  } catch {
    // A handle whose stop() throws gets the same treatment as one that ignores it.
  } finally {
    clearTimeout(timer);
  }
  handle.kill();
  return handle.exited;
}
