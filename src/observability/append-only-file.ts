import { closeSync, existsSync, fstatSync, ftruncateSync, mkdirSync, openSync, readSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { spanFileEndsWhole } from "./span-log.ts";

/**
 * Test-only fault injection, read when a log is created: while the file this variable names
 * exists, every write of the log fails with ENOSPC, as on a full disk. The durable store reads
 * the same variable (src/actor/durable-store.ts). Never set it outside tests.
 */
export const DISK_FULL_ENV = "HERMES_TEST_DISK_FULL";

/**
 * Where a log file goes when it rotates.
 *
 * @example
 * rotatedPathOf("/tmp/m/logs/echo.0.spans"); // "/tmp/m/logs/echo.0.1.spans"
 */
export function rotatedPathOf(path: string): string {
  return path.replace(/(\.[a-z]+)$/, ".1$1");
}

/**
 * One file an event log appends to: opened when first written (and again after a failure),
 * each batch appended whole or cut back, rotated by renaming to `<name>.1.<ext>`. Of `kind`
 * "lines", a JSON Lines file, which must not go on from a torn last line; of "batches", a span
 * file, which rotates before anything follows a cut last batch. The event log's two files.
 *
 * @example
 * const file = new AppendOnlyFile("/tmp/m/logs/echo.0.jsonl", 0o600, "lines", undefined);
 * file.writeWhole(Buffer.from('{"event":"started"}\n')); // throws (ENOSPC …) and leaves the file as it was
 * if (file.bytes > 64 << 20 && !file.rotate()) console.warn(file.lastError);
 */
export class AppendOnlyFile {
  /** -1 while the file is not open (it could not be opened or reopened): the next write tries again. */
  #fd = -1;
  /** Size of the file as this writer knows it. */
  bytes = 0;
  lastError: unknown;
  /** The file ends mid-line (a cut-back that failed, a writer killed mid-write): the next write ends it first. */
  #torn = false;

  constructor(
    readonly path: string,
    readonly mode: number,
    readonly kind: "lines" | "batches",
    readonly simulatedFull: string | undefined,
  ) {}

  open(): void {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    // a+: appends, and reads the file's end to see whether its last writer was cut off mid-write.
    this.#fd = openSync(this.path, "a+", this.mode);
    this.bytes = fstatSync(this.#fd).size;
    if (this.kind === "lines") this.#torn = this.bytes > 0 && !endsWithNewline(this.#fd, this.bytes);
    else if (!spanFileEndsWhole(this.#fd, this.bytes)) {
      // Readers go from batch to batch by their lengths: nothing may follow a cut one. Its file is set aside whole.
      this.closeFd();
      renameSync(this.path, rotatedPathOf(this.path));
      this.#fd = openSync(this.path, "a+", this.mode);
      this.bytes = 0;
    }
  }

  /**
   * Appends `buffer` completely or not at all: a write that fails part way (the disk filled
   * up mid-batch) is cut off again, so the file never holds half a line or half a batch.
   */
  writeWhole(buffer: Buffer): void {
    if (this.#fd < 0) this.open();
    if (this.simulatedFull !== undefined && existsSync(this.simulatedFull)) throw simulatedEnospc();
    const start = fstatSync(this.#fd).size;
    const data = this.#torn ? Buffer.concat([NEWLINE, buffer]) : buffer;
    let written = 0;
    try {
      while (written < data.length) written += writeSync(this.#fd, data, written);
    } catch (error) {
      if (written > 0) this.#cutBack(start);
      throw error;
    }
    this.#torn = false;
    this.bytes = start + data.length;
  }

  /** Renames the file to `<name>.1.<ext>` and starts a new one; false (lastError set) when that failed: the next write opens it again, wherever the rename left it. */
  rotate(): boolean {
    try {
      this.closeFd();
      renameSync(this.path, rotatedPathOf(this.path));
      this.open();
      return true;
    } catch (error) {
      this.closeFd();
      this.lastError = error;
      return false;
    }
  }

  closeFd(): void {
    if (this.#fd < 0) return;
    try {
      closeSync(this.#fd);
    } catch {
      // Already unusable: nothing more to lose.
    }
    this.#fd = -1;
  }

  #cutBack(size: number): void {
    try {
      ftruncateSync(this.#fd, size);
    } catch {
      // Cannot even truncate: reopen before the next write, which then starts on a fresh line.
      this.closeFd();
    }
  }
}

const NEWLINE = Buffer.from("\n");

function endsWithNewline(fd: number, size: number): boolean {
  const last = Buffer.alloc(1);
  return readSync(fd, last, 0, 1, size - 1) === 1 && last[0] === 0x0a;
}

function simulatedEnospc(): Error {
  return Object.assign(new Error(`ENOSPC: no space left on device, write (simulated by ${DISK_FULL_ENV})`), { code: "ENOSPC", errno: -28, syscall: "write" });
}
