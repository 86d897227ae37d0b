import { defineActor } from "../../src/actor/define-actor.ts";

/**
 * Bench actor: answers every request with the payload it got, and declares no capability. The
 * restart scenario's victims run it: eight actors addressed by name, none offering what another
 * offers, so each restart is a lone instance's (docs/actors.md, "What the mesh hears of a
 * start"). actors/echo.ts would make them one capability group, which is announced otherwise.
 */
export default defineActor({
  onRequest(request) {
    return request.payload;
  },
});
