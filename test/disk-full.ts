/**
 * A directory whose disk a test can fill up and free again, two ways: a real 2 MB tmpfs
 * (needs root and `mount -t tmpfs`; unmounted on dispose, whatever the test did), or the
 * test-only injection HERMES_TEST_DISK_FULL, under which the event log's writes fail with
 * ENOSPC and the durable store's with SQLITE_FULL while a flag file exists. The injection
 * works in any process whose environment has the variable when its log or store is created.
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type DiskKind = "tmpfs" | "injected";

export interface FullableDisk extends Disposable {
  readonly kind: DiskKind;
  /** A directory on the disk (the mount point, for tmpfs). */
  readonly dir: string;
  /** Environment a process needs so that filling applies to it (the injection's variable). */
  readonly env: Record<string, string>;
  /** Fills the disk up: writes fail from now on. */
  fill(): void;
  /** Frees the disk again. */
  free(): void;
  /** The file fill() writes, for a child process that frees a tmpfs itself (removing it frees it). */
  readonly filler: string | undefined;
}

const DISK_FULL_ENV = "HERMES_TEST_DISK_FULL";
const TMPFS_SIZE = "2m";

let tmpfsReason: string | undefined | null = null;

/** Why no tmpfs can be mounted on this machine, or undefined when one can (found out once, by mounting one). */
export function tmpfsUnavailable(): string | undefined {
  if (tmpfsReason !== null) return tmpfsReason;
  if (process.platform !== "linux") return (tmpfsReason = `tmpfs needs Linux (this is ${process.platform})`);
  if (process.getuid?.() !== 0) return (tmpfsReason = "mounting a tmpfs needs root");
  const probe = mkdtempSync(join(tmpdir(), "hm-tmpfs-probe-"));
  try {
    const mounted = mount(probe);
    if (mounted) return (tmpfsReason = `mount -t tmpfs is not allowed here: ${mounted}`);
    unmount(probe);
    return (tmpfsReason = undefined);
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/** The disk kinds to run a full-disk test on, each with the reason it must be skipped here, if any. */
export function diskKinds(): Array<{ kind: DiskKind; skip: string | undefined }> {
  return [
    { kind: "tmpfs", skip: tmpfsUnavailable() },
    { kind: "injected", skip: undefined },
  ];
}

/** A fresh disk of `kind`; dispose unmounts (tmpfs) and removes it. */
export function openDisk(kind: DiskKind): FullableDisk {
  return kind === "tmpfs" ? tmpfsDisk() : injectedDisk();
}

/**
 * Sets the injection's variable for what this process creates until dispose (logs and stores
 * read it when they are created).
 */
export function injectInto(disk: FullableDisk): Disposable {
  const before = process.env[DISK_FULL_ENV];
  if (disk.env[DISK_FULL_ENV] !== undefined) process.env[DISK_FULL_ENV] = disk.env[DISK_FULL_ENV];
  return {
    [Symbol.dispose]() {
      if (before === undefined) delete process.env[DISK_FULL_ENV];
      else process.env[DISK_FULL_ENV] = before;
    },
  };
}

/**
 * Appends to `filler` until its disk takes not one byte more (a child process on a tmpfs fills
 * it this way too, Deno's included: node:fs only); removing the file frees the disk again.
 */
export function fillUp(filler: string): void {
  // Big writes first, then ever smaller ones, until not one byte more fits.
  const fd = openSync(filler, "a");
  try {
    const chunk = Buffer.alloc(256 * 1024, 0x78);
    for (const size of [chunk.length, 4096, 64, 1]) {
      try {
        for (;;) writeSync(fd, chunk, 0, size);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
}

function tmpfsDisk(): FullableDisk {
  const dir = mkdtempSync(join(tmpdir(), "hm-full-"));
  const failed = mount(dir);
  if (failed) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`cannot mount a tmpfs on ${dir}: ${failed}`);
  }
  const filler = join(dir, ".filler");
  return {
    kind: "tmpfs",
    dir,
    env: {},
    filler,
    fill: () => fillUp(filler),
    free() {
      rmSync(filler, { force: true });
    },
    [Symbol.dispose]() {
      try {
        unmount(dir);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

function injectedDisk(): FullableDisk {
  const root = mkdtempSync(join(tmpdir(), "hm-full-"));
  const dir = join(root, "disk");
  mkdirSync(dir);
  const flag = join(root, "disk-full.flag");
  return {
    kind: "injected",
    dir,
    env: { [DISK_FULL_ENV]: flag },
    filler: undefined,
    fill: () => writeFileSync(flag, ""),
    free: () => rmSync(flag, { force: true }),
    [Symbol.dispose]: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** Mounts a tmpfs on `dir`; returns why it failed, or undefined. */
function mount(dir: string): string | undefined {
  const run = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${TMPFS_SIZE},mode=0700`, "tmpfs", dir], { stderr: "pipe", stdout: "ignore" });
  return run.exitCode === 0 ? undefined : run.stderr.toString().trim() || `mount exited with ${run.exitCode}`;
}

/**
 * Unmounts `dir`. A process still holding a file there (an actor that outlived its test) makes
 * a plain umount fail with EBUSY: then detach it lazily, so that no mount outlives the test.
 */
function unmount(dir: string): void {
  if (Bun.spawnSync(["umount", dir], { stderr: "ignore", stdout: "ignore" }).exitCode === 0) return;
  const lazy = Bun.spawnSync(["umount", "-l", dir], { stderr: "pipe", stdout: "ignore" });
  if (lazy.exitCode !== 0) throw new Error(`cannot unmount ${dir}: ${lazy.stderr.toString().trim()}`);
}
