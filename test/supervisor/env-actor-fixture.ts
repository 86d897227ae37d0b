/**
 * An actor module for standby-host tests: answers every request with what its process sees
 * (the variables the request names, its arguments, its pid), so a test can tell a standby host
 * that took on an actor from one spawned for it.
 */
import { defineActor } from "../../src/actor/define-actor.ts";

export default defineActor({
  onRequest(request) {
    const names = Array.isArray(request.payload.env) ? (request.payload.env as string[]) : [];
    return {
      env: Object.fromEntries(names.map((name) => [name, process.env[name] ?? null])),
      argv: process.argv.slice(2),
      pid: process.pid,
    };
  },
});
