import type { Envelope } from "../src/protocol/envelope.ts";

/**
 * Where a connection's envelopes go. A peer may send the moment its hello is out, before the
 * dialing side has wired its handler: until a handler is set, envelopes are held, and they are
 * handed over in order when it is.
 */
export class EnvelopeHandoff<H extends (env: Envelope, seq: number, ...rest: never[]) => void> {
  #handler: H | undefined;
  #held: Array<[Envelope, number]> = [];

  get handler(): H | undefined {
    return this.#handler;
  }

  /** Sets the handler and returns what was held for it, oldest first. */
  set(handler: H): Array<[Envelope, number]> {
    this.#handler = handler;
    const held = this.#held;
    this.#held = [];
    return held;
  }

  hold(env: Envelope, seq: number): void {
    this.#held.push([env, seq]);
  }
}
