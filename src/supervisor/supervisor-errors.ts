/**
 * The HermesErrors a supervisor raises, in one place so their codes and fields stay consistent:
 * INVALID_REQUEST for misuse, UNROUTABLE for an unknown child, UNAVAILABLE for a child or
 * supervisor that is not (or could not be) up. Internal to the supervisor: callers see these
 * as HermesErrors and match on `code` and `fields.reason`.
 */
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

/** `start()` called on a supervisor that is not idle. */
export function alreadyStarted(supervisor: string): HermesError {
  return new HermesError(ErrorCode.INVALID_REQUEST, `supervisor '${supervisor}' was already started`, {
    reason: "already started",
    supervisor,
  });
}

/** A child's start() rejected (reason "failed_to_start_child"); the rejection is the cause. */
export function failedToStart(supervisor: string, child: string, error: unknown): HermesError {
  return new HermesError(ErrorCode.UNAVAILABLE, `supervisor '${supervisor}': child '${child}' failed to start: ${messageOf(error)}`, {
    reason: "failed_to_start_child",
    supervisor,
    child,
  }, { cause: error });
}

/** The supervisor cannot do this now, e.g. it is stopping or stopped. */
export function supervisorUnavailable(supervisor: string, reason: string): HermesError {
  return new HermesError(ErrorCode.UNAVAILABLE, `supervisor '${supervisor}': ${reason}`, { reason, supervisor });
}

/** The child exists but has no running instance. */
export function childNotRunning(supervisor: string, child: string): HermesError {
  return new HermesError(ErrorCode.UNAVAILABLE, `child '${child}' of supervisor '${supervisor}' is not running`, {
    reason: "not running",
    supervisor,
    child,
  });
}

/** No child has this id; `known` lists the ids there are. */
export function unknownChild(supervisor: string, child: string, known: string[]): HermesError {
  return new HermesError(ErrorCode.UNROUTABLE, `supervisor '${supervisor}' has no child '${child}'`, { target: child, known });
}

/** The message of anything thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
