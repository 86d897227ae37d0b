/**
 * Nesting: a supervisor as the child of another. The tree's escalation path is this handle's
 * `exited`, which resolves abnormally when the child supervisor gives up.
 */
import type { ChildSpec, RestartType } from "./child-spec.ts";
import type { SupervisorListener } from "./supervisor-events.ts";
import type { SupervisorOptions } from "./supervisor-options.ts";
import { Supervisor } from "./supervisor.ts";

/** A child supervisor's options plus how its parent treats it. */
export interface SupervisorChildOptions extends SupervisorOptions {
  /** Default "permanent". */
  restart?: RestartType;
  /** Ms the parent waits for it to stop its children before killing them all. Default Infinity (OTP). */
  shutdown?: number | "brutal_kill";
  /** Subscribed to every instance, so one listener follows the child supervisor across restarts. */
  onEvent?: SupervisorListener;
}

/**
 * A ChildSpec (type "supervisor", id = the supervisor's id) whose every start builds and starts a
 * fresh Supervisor. Its handle's `exited` resolves with `{ code: 1, reason: "reached_max_restart_intensity" }`
 * when that supervisor gives up (an abnormal exit, so the parent restarts it by its strategy);
 * `stop()` stops it (children in reverse order) and `kill()` kills its children at once.
 *
 * @example
 * const root = new Supervisor({
 *   id: "root",
 *   children: [
 *     supervisorChild({ id: "workers", strategy: "one_for_all", intensity: 3, period: 10_000, children: [a, b] }),
 *     { id: "api", start: processChild([process.execPath, "actors/api.ts"]) },
 *   ],
 * });
 */
export function supervisorChild(options: SupervisorChildOptions): ChildSpec {
  const { restart, shutdown, onEvent, ...supervisorOptions } = options;
  // Checked now, so a bad nested tree fails when the parent is built rather than when it starts.
  new Supervisor(supervisorOptions);
  return {
    id: options.id,
    type: "supervisor",
    ...(restart && { restart }),
    ...(shutdown !== undefined && { shutdown }),
    async start() {
      const supervisor = new Supervisor(supervisorOptions);
      if (onEvent) supervisor.onEvent(onEvent);
      await supervisor.start();
      return {
        exited: supervisor.exited,
        stop: () => void supervisor.stop(),
        kill: () => void supervisor.kill(),
        children: () => supervisor.status(),
      };
    },
  };
}
