import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { rotatedPathOf, spansPathOf, type LogEvent } from "./event-log.ts";
import { decodeSpansInto } from "./span-log-reader.ts";
import type { SpanEvent } from "./span-log.ts";

/**
 * Every event of one log as objects, oldest first: the lines of its JSON Lines file and the
 * records of its span file, merged by `ts` (rotated files are not included). A torn last line
 * or batch of a killed writer is skipped; a log that does not exist gives none.
 *
 * @example
 * const handled = readEvents(join(dir, "logs", "echo.0.jsonl")).filter((e) => e.event === "handled");
 */
export function readEvents(path: string): LogEvent[] {
  // A stable sort: what was written in the same millisecond keeps its order within each file.
  return new EventLogTail(path).read().sort((a, b) => Number(a.ts) - Number(b.ts));
}

/**
 * A reader following one event log (its JSON Lines file and its span file), as `tail -f` does:
 * each `read()` returns what was appended since the last one, whole lines and whole batches
 * only, in file order (JSON lines first). When a file rotates, the rest of it is read from its
 * new name (`<name>.1.<ext>`) before the new file, so nothing written just before is missed.
 *
 * @example
 * const tail = new EventLogTail(join(dir, "logs", "echo.0.jsonl"));
 * setInterval(() => tail.read().forEach((e) => console.log(JSON.stringify(e))), 250);
 */
export class EventLogTail {
  readonly path: string;
  #lines: FollowedFile;
  #spans: FollowedFile;

  constructor(path: string) {
    this.path = path;
    this.#lines = new FollowedFile(path);
    this.#spans = new FollowedFile(spansPathOf(path));
  }

  read(): LogEvent[] {
    const events: LogEvent[] = [];
    this.#lines.read((bytes) => {
      const end = bytes.lastIndexOf(0x0a) + 1;
      for (const line of bytes.toString("utf8", 0, end).split("\n")) {
        if (!line) continue;
        try {
          events.push(JSON.parse(line));
        } catch {
          // A torn line of a killed writer.
        }
      }
      return end;
    });
    this.#spans.read((bytes) => decodeSpansInto(bytes, events as SpanEvent[]));
    return events;
  }
}

/** Takes the bytes read and says how many it used (whole lines or batches); the rest is read again next time. */
type Take = (bytes: Buffer) => number;

/** One file followed by its path: where reading got to, in which file (its inode). */
class FollowedFile {
  #offset = 0;
  #inode: number | undefined;

  constructor(readonly path: string) {}

  read(take: Take): void {
    const fd = openOrUndefined(this.path);
    try {
      const stat = fd === undefined ? undefined : fstatSync(fd);
      if (this.#inode !== undefined && stat?.ino !== this.#inode) {
        // Rotated (or removed) since the last read: the rest of the file it was, then the new one from its start.
        this.#finishRotated(take);
        this.#offset = 0;
      } else if (stat && stat.size < this.#offset) {
        this.#offset = 0; // cut back in place
      }
      this.#inode = stat?.ino;
      if (fd !== undefined) this.#offset = readFrom(fd, stat!.size, this.#offset, take);
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  #finishRotated(take: Take): void {
    const fd = openOrUndefined(rotatedPathOf(this.path));
    if (fd === undefined) return;
    try {
      const stat = fstatSync(fd);
      if (stat.ino === this.#inode) readFrom(fd, stat.size, this.#offset, take);
    } finally {
      closeSync(fd);
    }
  }
}

function openOrUndefined(path: string): number | undefined {
  try {
    return openSync(path, "r");
  } catch {
    return undefined;
  }
}

/** Hands the bytes of `fd` from `offset` to `size` to `take`; returns the new offset. */
function readFrom(fd: number, size: number, offset: number, take: Take): number {
  if (size <= offset) return offset;
  const bytes = Buffer.allocUnsafe(size - offset);
  let read = 0;
  while (read < bytes.length) {
    const n = readSync(fd, bytes, read, bytes.length - read, offset + read);
    if (n <= 0) break;
    read += n;
  }
  return offset + take(bytes.subarray(0, read));
}
