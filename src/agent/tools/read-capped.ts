/**
 * Reading a byte stream up to a cap, so that a large response or a chatty process cannot fill
 * the agent's memory or the model's context.
 */

/** What was read: the text (UTF-8, cut at the cap), the bytes seen, and whether it was cut. */
export interface CappedText {
  text: string;
  bytes: number;
  truncated: boolean;
}

/**
 * Reads `stream` keeping at most `maxBytes`. With `drain: false` (an HTTP body) the stream is
 * cancelled at the cap; with `drain: true` (a child's stdout) the rest is read and discarded,
 * because a child blocked on a full pipe would otherwise never exit. `bytes` counts everything
 * read. Aborting `signal` stops the reading where it is (marked truncated). A multi-byte
 * character cut by the cap is dropped rather than shown half.
 *
 * @example
 * const { text, truncated } = await readCapped(response.body!, 256 * 1024, { drain: false });
 */
export async function readCapped(stream: ReadableStream<Uint8Array>, maxBytes: number, options: { drain: boolean; signal?: AbortSignal }): Promise<CappedText> {
  const reader = stream.getReader();
  let stopped = false;
  const stop = () => {
    stopped = true;
    reader.cancel().catch(() => {});
  };
  if (options.signal?.aborted) stop();
  options.signal?.addEventListener("abort", stop, { once: true });
  const kept: Uint8Array[] = [];
  let size = 0;
  let bytes = 0;
  let truncated = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (size < maxBytes) {
        const part = value.byteLength > maxBytes - size ? value.subarray(0, maxBytes - size) : value;
        kept.push(part);
        size += part.byteLength;
      }
      if (bytes > maxBytes) {
        truncated = true;
        if (!options.drain) {
          await reader.cancel();
          break;
        }
      }
    }
  } finally {
    options.signal?.removeEventListener("abort", stop);
    reader.releaseLock();
  }
  truncated ||= stopped;
  const decoder = new TextDecoder();
  const text = kept.map((part) => decoder.decode(part, { stream: true })).join("") + (truncated ? "" : decoder.decode());
  return { text, bytes, truncated };
}
