/** The part of a Bun socket the write queue needs. */
export interface WritableSocket {
  /** Bytes written, possibly fewer than asked; Bun buffers nothing. -1 or 0 when it cannot write. */
  write(data: Uint8Array): number;
}

const INITIAL_BYTES = 64 * 1024;
/** Past this many queued bytes a flush happens at once instead of at the end of the tick. */
const HIGH_WATER_BYTES = 256 * 1024;

/**
 * Frames written in one tick are coalesced into one buffer and flushed with one write at the
 * end of the tick (or at once past a high-water mark). Whatever the kernel does not take is
 * kept and resumed on `drain`, since Bun's socket.write buffers nothing.
 */
export class WriteQueue {
  #socket: WritableSocket;
  #buf = new Uint8Array(INITIAL_BYTES);
  #start = 0;
  #end = 0;
  #scheduled = false;
  #blocked = false;
  #idle: Array<() => void> = [];
  #beforeFlush: (() => void) | undefined;
  #flushTask = () => {
    this.#scheduled = false;
    this.#beforeFlush?.();
    this.flush();
  };

  /**
   * `beforeFlush` runs at the end of the tick just before the coalesced write, so an owner can
   * add a frame it deferred (the connection's cumulative ack rides along with the answers).
   */
  constructor(socket: WritableSocket, beforeFlush?: () => void) {
    this.#socket = socket;
    this.#beforeFlush = beforeFlush;
  }

  /** True when a flush is already due at the end of this tick. */
  get scheduled(): boolean {
    return this.#scheduled;
  }

  /** Makes sure a flush (and the beforeFlush hook) runs at the end of this tick. */
  schedule(): void {
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(this.#flushTask);
    }
  }

  /** Bytes waiting to be written. */
  get pendingBytes(): number {
    return this.#end - this.#start;
  }

  /** True while the kernel refused bytes and a drain is awaited. */
  get blocked(): boolean {
    return this.#blocked;
  }

  /** Queues one frame: u32be length, then the body. */
  pushFrame(body: Uint8Array): void {
    const length = body.length;
    this.#reserve(length + 4);
    const buf = this.#buf;
    let at = this.#end;
    buf[at] = length >>> 24;
    buf[at + 1] = (length >>> 16) & 0xff;
    buf[at + 2] = (length >>> 8) & 0xff;
    buf[at + 3] = length & 0xff;
    buf.set(body, at + 4);
    this.#end = at + 4 + length;
    if (this.#end - this.#start >= HIGH_WATER_BYTES) this.flush();
    else this.schedule();
  }

  /** Writes as much as the kernel takes now. */
  flush(): void {
    if (this.#blocked || this.#end === this.#start) return;
    const written = this.#socket.write(this.#buf.subarray(this.#start, this.#end));
    if (written > 0) this.#start += written;
    if (this.#start === this.#end) {
      this.#start = this.#end = 0;
      this.#notifyIdle();
    } else {
      this.#blocked = true;
    }
  }

  /** Called from the socket's drain handler: the kernel has room again. */
  onDrain(): void {
    this.#blocked = false;
    this.flush();
  }

  /** Resolves once every queued byte has been handed to the kernel. */
  whenFlushed(): Promise<void> {
    if (this.#end === this.#start) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#idle.push(resolve);
    this.flush();
    return promise;
  }

  /** Drops everything (the socket is gone) and releases anyone waiting for a flush. */
  discard(): void {
    this.#start = this.#end = 0;
    this.#blocked = false;
    this.#notifyIdle();
  }

  #notifyIdle(): void {
    if (this.#idle.length === 0) return;
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }

  #reserve(bytes: number): void {
    if (this.#end + bytes <= this.#buf.length) return;
    const used = this.#end - this.#start;
    if (used + bytes <= this.#buf.length && this.#start > 0) {
      this.#buf.copyWithin(0, this.#start, this.#end);
    } else {
      let size = this.#buf.length * 2;
      while (size < used + bytes) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(this.#buf.subarray(this.#start, this.#end));
      this.#buf = grown;
    }
    this.#start = 0;
    this.#end = used;
  }
}
