/**
 * Memory of a live process from /proc (Linux). VmRSS counts every resident page, including the
 * pages of the Bun executable that all Bun processes share through the page cache (RssFile);
 * RssAnon is what the process holds alone (heap, stacks); Pss divides each shared page among
 * the processes mapping it, so the Pss of N actors adds up to what they cost together.
 */
import { readFileSync } from "node:fs";

/** Resident memory of one process, in MB (2^20 bytes). */
export interface ProcessMemory {
  rss: number;
  /** Private anonymous pages (heap, stacks). */
  anon: number;
  /** File-backed pages (the executable, mapped libraries), shared with other processes. */
  file: number;
  /** Proportional set size; undefined when smaps_rollup is not readable. */
  pss?: number;
}

const KB_PER_MB = 1024;

/** A `Key:   1234 kB` field of a /proc status-like text, in MB. */
function field(text: string, key: string): number | undefined {
  const match = new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text);
  return match ? Number(match[1]) / KB_PER_MB : undefined;
}

/**
 * Reads the memory of `pid`; throws when the process does not exist (or is not on Linux).
 *
 * @example
 * processMemory(process.pid).rss; // e.g. 61.2
 */
export function processMemory(pid: number): ProcessMemory {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rss = field(status, "VmRSS");
  if (rss === undefined) throw new Error(`/proc/${pid}/status has no VmRSS (a zombie?)`);
  const memory: ProcessMemory = { rss, anon: field(status, "RssAnon") ?? 0, file: field(status, "RssFile") ?? 0 };
  try {
    const pss = field(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"), "Pss");
    if (pss !== undefined) memory.pss = pss;
  } catch {
    // Older kernels have no smaps_rollup; Pss is then left out.
  }
  return memory;
}
