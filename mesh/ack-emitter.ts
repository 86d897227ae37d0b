import { AckTracker } from "./ack-tracker.ts";
import type { WriteQueue } from "./write-queue.ts";

/**
 * When a connection's cumulative ack goes out: on the next data write of this event-loop turn
 * (an answer, the caller's next request) through the write queue's beforeFlush hook, or alone
 * on the next turn when no data goes out. One write per turn either way, and well inside the
 * 5 ms docs/protocol.md §4 allows.
 */
export class AckEmitter {
  readonly tracker = new AckTracker();
  #writer!: WriteQueue;
  #writeAck: (seq: number) => void;
  #pending = false;
  #alone = () => {
    this.#pending = false;
    this.flush();
    this.#writer.flush();
  };

  /** `writeAck` queues an ack frame; call `attach` with the write queue before traffic flows. */
  constructor(writeAck: (seq: number) => void) {
    this.#writeAck = writeAck;
  }

  attach(writer: WriteQueue): void {
    this.#writer = writer;
  }

  /** Marks a received seq handled and makes sure an ack follows. */
  settle(seq: number): void {
    if (this.tracker.settle(seq) && !this.#pending && !this.#writer.scheduled) {
      this.#pending = true;
      setImmediate(this.#alone);
    }
  }

  /** Queues the ack frame now if the ackable point moved (the write queue's beforeFlush hook). */
  flush = (): void => {
    const seq = this.tracker.takeAck();
    if (seq > 0) this.#writeAck(seq);
  };
}
