import type { Envelope } from "../src/protocol/envelope.ts";
import type { Connection } from "./connection.ts";

/**
 * The ways back to a requester. An answer goes on the connection its request came on while
 * that is open; if it broke (the requester redialled), on any open connection from the same
 * node; else through `fallback` (a link found in the registry). With none of those, the
 * requester's redelivery fetches the answer from the dedupe memory.
 */
export class ReplyPaths {
  #byPeer = new Map<string, Set<Connection>>();
  #fallback: (to: string, reply: Envelope) => void;

  constructor(fallback: (to: string, reply: Envelope) => void) {
    this.#fallback = fallback;
  }

  /** Remembers an accepted connection under its peer's node name until it closes. */
  track(connection: Connection): void {
    const peer = connection.peer!.node;
    let set = this.#byPeer.get(peer);
    if (!set) this.#byPeer.set(peer, (set = new Set()));
    set.add(connection);
    connection.closed.then(() => {
      set.delete(connection);
      if (set.size === 0 && this.#byPeer.get(peer) === set) this.#byPeer.delete(peer);
    });
  }

  /** Sends `reply`; `seq` (of the request on `origin`) is settled when it goes out there. */
  send(reply: Envelope, origin?: Connection, seq?: number): void {
    if (origin?.isOpen) {
      origin.send(reply, seq);
      return;
    }
    const to = reply.target_agent!;
    for (const connection of this.#byPeer.get(to) ?? []) {
      if (connection.isOpen) {
        connection.send(reply);
        return;
      }
    }
    this.#fallback(to, reply);
  }
}
