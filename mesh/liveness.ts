import type { HermesError } from "./errors.ts";
import { invalidFrame } from "./frames.ts";

/**
 * The longest between two checks. A quarter of the shortest clock keeps each deadline within a
 * quarter of its length; with the defaults (ping after 5 s, hello within 5 s, a frame within
 * 30 s) one check a second. An idle connection wakes its process that often and no more: four
 * times a second per connection was most of an idle actor's wake-ups.
 */
const MAX_CHECK_MS = 1000;

/** What the connection should do after a liveness check. */
export type LivenessAction =
  | { type: "close"; error: HermesError }
  | { type: "ping"; nonce: number }
  | { type: "unhealthy"; missedPongs: number }
  | { type: "healthy" };

/**
 * The clocks of one connection: hello deadline, partial-frame deadline (slow-loris guard),
 * ping after an idle interval, and health from missed pongs (docs/protocol.md §5: three
 * missed pongs mark the peer unhealthy). Pure bookkeeping; the connection acts on what
 * `check` returns.
 */
export class Liveness {
  readonly pingIntervalMs: number;
  readonly helloTimeoutMs: number;
  readonly frameTimeoutMs: number;
  readonly stats = { pingsSent: 0, pongsReceived: 0 };
  #openedAt = Date.now();
  #lastReceived = Date.now();
  #partialSince = 0;
  #nonce = 0;
  #missedPongs = 0;
  #pingOutstanding = false;
  #lastPingSent = 0;

  #timer: ReturnType<typeof setInterval> | undefined;

  /** Runs `check` (the connection's housekeeping) every quarter of the shortest clock, at most every second. */
  start(check: () => void): void {
    this.#timer = setInterval(check, this.checkEveryMs);
    this.#timer.unref?.();
  }

  /** How often `start` runs its check, in ms. */
  get checkEveryMs(): number {
    return Math.max(1, Math.min(MAX_CHECK_MS, Math.min(this.pingIntervalMs, this.helloTimeoutMs, this.frameTimeoutMs) / 4));
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  constructor(options: { pingIntervalMs: number; helloTimeoutMs: number; frameTimeoutMs: number }) {
    this.pingIntervalMs = options.pingIntervalMs;
    this.helloTimeoutMs = options.helloTimeoutMs;
    this.frameTimeoutMs = options.frameTimeoutMs;
  }

  /** Bytes arrived; `partialBytes` is what the frame decoder holds of an unfinished frame. */
  received(partialBytes: number, now = Date.now()): void {
    this.#lastReceived = now;
    this.#partialSince = partialBytes > 0 ? this.#partialSince || now : 0;
  }

  pong(): void {
    this.#pingOutstanding = false;
    this.stats.pongsReceived++;
  }

  /** The periodic check. `state` is the connection's life-cycle state. */
  check(state: "handshaking" | "open" | "closing" | "closed", now = Date.now()): LivenessAction[] {
    if (state === "handshaking" && now - this.#openedAt > this.helloTimeoutMs) {
      return [{ type: "close", error: invalidFrame("no hello received in time", `hello within ${this.helloTimeoutMs} ms`) }];
    }
    if (this.#partialSince > 0 && now - this.#partialSince > this.frameTimeoutMs) {
      return [{ type: "close", error: invalidFrame("frame not completed in time", `a whole frame within ${this.frameTimeoutMs} ms`) }];
    }
    if (state !== "open") return [];
    if (now - this.#lastReceived < this.pingIntervalMs) {
      // Traffic is flowing: whatever was missed is forgiven.
      const wasUnhealthy = this.#missedPongs >= 3;
      this.#missedPongs = 0;
      return wasUnhealthy ? [{ type: "healthy" }] : [];
    }
    if (now - this.#lastPingSent < this.pingIntervalMs) return [];
    const actions: LivenessAction[] = [];
    if (this.#pingOutstanding && ++this.#missedPongs === 3) actions.push({ type: "unhealthy", missedPongs: 3 });
    this.#pingOutstanding = true;
    this.#lastPingSent = now;
    this.stats.pingsSent++;
    actions.push({ type: "ping", nonce: ++this.#nonce });
    return actions;
  }
}
