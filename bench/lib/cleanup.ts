/**
 * Last-resort cleanup: whatever the harness started (child processes, socket directories) is
 * registered here and undone when the process exits or is interrupted, even if the code that
 * owns it never reached its `finally` (a hung await, a test that timed out).
 */
const actions = new Set<() => void>();
let installed = false;

/**
 * Runs every registered cleanup now. For hosts where "exit" never fires (bun test): call it
 * from an `afterAll`.
 */
export function runCleanups(): void {
  for (const action of actions) {
    try {
      action();
    } catch {
      // Best effort: the process is going away.
    }
  }
  actions.clear();
}

/** Registers a synchronous cleanup; returns a function that unregisters it (after a normal cleanup). */
export function onExit(action: () => void): () => void {
  if (!installed) {
    installed = true;
    process.on("exit", runCleanups);
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      process.once(signal, () => {
        runCleanups();
        process.exit(130);
      });
    }
  }
  actions.add(action);
  return () => actions.delete(action);
}
