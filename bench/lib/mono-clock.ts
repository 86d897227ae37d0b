/**
 * A clock every process on the machine shares: CLOCK_MONOTONIC in ns, read through libc
 * (bun:ffi, about 130 ns a read). `Bun.nanoseconds()` and `process.hrtime` count from each
 * process's own start in Bun, so they cannot compare a send in one process with an arrival
 * in another. Where libc cannot be loaded, the wall clock through `performance.timeOrigin`
 * stands in (microsecond-ish agreement between processes) and `precise` says so.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";

let read: (() => number) | undefined;
let isPrecise = false;

function load(): () => number {
  try {
    const lib = dlopen("libc.so.6", { clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } });
    const timespec = new BigInt64Array(2);
    const at = ptr(timespec);
    const CLOCK_MONOTONIC = 1;
    isPrecise = true;
    return () => {
      lib.symbols.clock_gettime(CLOCK_MONOTONIC, at);
      return Number(timespec[0]) * 1e9 + Number(timespec[1]);
    };
  } catch {
    return () => (performance.timeOrigin + performance.now()) * 1e6;
  }
}

/**
 * Now, in ns, on the machine-wide clock.
 *
 * @example
 * const sent = monoNow(); // in one process ...
 * const oneWayNs = monoNow() - sent; // ... in another
 */
export function monoNow(): number {
  return (read ??= load())();
}

/** Whether monoNow() is the kernel's monotonic clock (shared exactly by every process). */
export function monoPrecise(): boolean {
  read ??= load();
  return isPrecise;
}
