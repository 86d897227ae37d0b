/**
 * Writes to a plain Bun socket without losing bytes: Bun's `socket.write` returns how much the
 * kernel took and buffers nothing, so the rest is copied and queued here and written, in
 * order, when the socket drains (call `drain()` from the socket's drain handler).
 */
export class RawWriter {
  #socket: { write(bytes: Uint8Array): number };
  #queue: Uint8Array[] = [];

  constructor(socket: { write(bytes: Uint8Array): number }) {
    this.#socket = socket;
  }

  /** Bytes still queued. */
  get pending(): number {
    let n = 0;
    for (const b of this.#queue) n += b.length;
    return n;
  }

  /** Writes `bytes` (the caller may reuse them at once: what is not written now is copied). */
  write(bytes: Uint8Array): void {
    if (this.#queue.length > 0) {
      this.#queue.push(bytes.slice());
      return;
    }
    const written = this.#socket.write(bytes);
    if (written < bytes.length) this.#queue.push(bytes.slice(Math.max(0, written)));
  }

  /** Writes what is queued, as far as the kernel takes it. */
  drain(): void {
    while (this.#queue.length > 0) {
      const head = this.#queue[0]!;
      const written = this.#socket.write(head);
      if (written < head.length) {
        this.#queue[0] = head.subarray(Math.max(0, written));
        return;
      }
      this.#queue.shift();
    }
  }
}
