/**
 * What a scenario reports: figures, each printed next to the baseline measured in the same
 * run as a ratio, plus the machine they were measured on.
 */
import { existsSync, readFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, release } from "node:os";
import { join } from "node:path";
import { minorFaults } from "./cpu-time.ts";
import { taskset } from "./placement.ts";

/** One measured figure. */
export interface Figure {
  scenario: string;
  /** What was measured, e.g. "hermes request p50". */
  name: string;
  /** CPU placement ("same core", "cross core", "unpinned"), or in-process. */
  placement: string;
  unit: string;
  value: number;
  /** Whether a larger value is better (throughput) or worse (latency). */
  better: "higher" | "lower";
  /** The same quantity for the baseline contender, measured interleaved in the same run. */
  baseline?: { name: string; value: number };
  /** A goal: the ratio to the baseline at most `maxRatio` or at least `minRatio`, the value at least `minValue`, or at most `maxValue`. */
  target?: { maxRatio?: number; minRatio?: number; minValue?: number; maxValue?: number };
  /** Anything else worth keeping in the JSON output. */
  detail?: Record<string, unknown>;
}

/** Figure value divided by its baseline's value (undefined without a baseline). */
export function ratio(figure: Figure): number | undefined {
  return figure.baseline && figure.baseline.value > 0 ? figure.value / figure.baseline.value : undefined;
}

/** "met", "missed", or "" when the figure has no target. */
export function targetStatus(figure: Figure): string {
  const t = figure.target;
  if (!t) return "";
  const r = ratio(figure);
  if (t.maxRatio !== undefined) return r !== undefined && r <= t.maxRatio ? `met (<= ${t.maxRatio}x)` : `MISSED (<= ${t.maxRatio}x)`;
  if (t.minRatio !== undefined) return r !== undefined && r >= t.minRatio ? `met (>= ${t.minRatio}x)` : `MISSED (>= ${t.minRatio}x)`;
  if (t.minValue !== undefined) return figure.value >= t.minValue ? `met (>= ${formatValue(t.minValue, figure.unit)})` : `MISSED (>= ${formatValue(t.minValue, figure.unit)})`;
  if (t.maxValue !== undefined) return figure.value <= t.maxValue ? `met (<= ${formatValue(t.maxValue, figure.unit)})` : `MISSED (<= ${formatValue(t.maxValue, figure.unit)})`;
  return "";
}

/** A number with an SI suffix for rates, one decimal for times and sizes, whole counts as they are. */
export function formatValue(value: number, unit: string): string {
  if (unit === "us" || unit === "ms" || unit === "MB" || unit === "MB/s") return `${value.toFixed(1)} ${unit}`;
  if (unit === "actors") return `${value} ${unit}`;
  if (value >= 1e6) return `${(value / 1e6).toFixed(2)} M${unit}`;
  if (value >= 1e3) return `${(value / 1e3).toFixed(1)} k${unit}`;
  return `${value.toFixed(1)} ${unit}`;
}

/** The results table: every figure next to its baseline, as text. */
export function formatTable(figures: readonly Figure[]): string {
  const header = ["scenario", "figure", "placement", "value", "baseline", "baseline value", "ratio", "target"];
  const rows = figures.map((f) => {
    const r = ratio(f);
    return [
      f.scenario,
      f.name,
      f.placement,
      formatValue(f.value, f.unit),
      f.baseline?.name ?? "",
      f.baseline ? formatValue(f.baseline.value, f.unit) : "",
      r === undefined ? "" : `${r.toFixed(2)}x`,
      targetStatus(f),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i >= 3 && i !== 4 && i !== 7 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

/** The machine a run was measured on. */
export interface MachineInfo {
  cpuModel: string;
  cores: number;
  bun: string;
  kernel: string;
  taskset: boolean;
  /** 1-minute load average when the run started (each scenario also reports what others used during it). */
  load: number;
  /** The commit measured, "+dirty" when the work tree had changes; BENCH_COMMIT names it for an exported tree; an installed package gives its name@version. */
  commit: string;
  date: string;
  /**
   * This process's allocator and compiler settings (its MIMALLOC_ and BUN_JSC_ variables): it is
   * the client of the actor scenarios and their supervisor, and the Bun fixtures it spawns
   * inherit them. Members get this process's values, or MEMBER_RUNTIME_DEFAULTS where it sets none.
   */
  allocator: string;
  /**
   * What one minor page fault costs this process, in us (32 MiB of fresh memory touched a page
   * at a time); NaN without /proc. About 0.1 to 0.5 on bare metal; on the paravirtualised 2-core
   * boxes of docs/benchmarks.md about 11, which makes memory handed back and touched again, and
   * each new process's first pages, a visible cost.
   */
  pageFaultUs: number;
  /**
   * How an idle core waits (Linux cpuidle): the driver, and under the `haltpoll` driver of a KVM
   * guest how long an idle virtual CPU polls before it halts. A halted virtual CPU is woken by an
   * interrupt through the hypervisor, which every message across cores pays while its receiver
   * sleeps: on the 2-core boxes of docs/benchmarks.md (polling 0 ns, set on the kernel's command
   * line) about 20 us more CPU at each end of a round trip than with Linux's default 200,000 ns
   * ("Wake-ups across cores"). "unknown" where /sys does not say.
   */
  idle: string;
}

/** The time per minor page fault of touching `bytes` of fresh memory once per 4 KiB page. */
export function pageFaultMicros(bytes = 32 << 20): number {
  const before = minorFaults("self");
  const t0 = Bun.nanoseconds();
  const view = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 4096) view[i] = 1;
  const faults = minorFaults("self") - before;
  return faults > 0 ? (Bun.nanoseconds() - t0) / 1000 / faults : Number.NaN;
}

export function machineInfo(): MachineInfo {
  let cpuModel = cpus()[0]?.model ?? "unknown";
  try {
    cpuModel = /model name\s*:\s*(.+)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? cpuModel;
  } catch {
    // Not Linux: the os module's answer stands.
  }
  return {
    cpuModel, cores: availableParallelism(), bun: Bun.version, kernel: release(), taskset: taskset() !== null,
    load: loadavg()[0]!, commit: process.env.BENCH_COMMIT ?? gitCommit(), date: new Date().toISOString(),
    pageFaultUs: pageFaultMicros(),
    idle: idleState(),
    allocator: Object.entries(process.env).filter(([name]) => /^(MIMALLOC_|BUN_JSC_)/.test(name)).map(([name, value]) => `${name}=${value}`).join(" ") || "Bun's defaults",
  };
}

/** "haltpoll, polls 0 ns before halting", "intel_idle", or "unknown": MachineInfo.idle. */
function idleState(): string {
  const read = (path: string) => {
    try {
      return readFileSync(path, "utf8").trim();
    } catch {
      return undefined;
    }
  };
  const driver = read("/sys/devices/system/cpu/cpuidle/current_driver");
  if (driver === undefined) return "unknown";
  const pollNs = driver === "haltpoll" ? read("/sys/module/haltpoll/parameters/guest_halt_poll_ns") : undefined;
  return pollNs === undefined ? driver : `${driver}, polls ${pollNs} ns before halting`;
}

/** The harness's own checkout (`.git` beside bench/), or the installed package's name and version. */
function gitCommit(): string {
  const root = join(import.meta.dir, "../..");
  // An installed package has no .git: git would answer for whatever repository holds node_modules.
  if (!existsSync(join(root, ".git"))) return packageVersion(root);
  const git = (...args: string[]) => Bun.spawnSync(["git", ...args], { cwd: root, stderr: "ignore" });
  try {
    const head = git("rev-parse", "--short", "HEAD");
    if (head.exitCode !== 0) return "unknown";
    const dirty = git("status", "--porcelain", "--untracked-files=no").stdout.toString().trim() !== "";
    return head.stdout.toString().trim() + (dirty ? "+dirty" : "");
  } catch {
    return "unknown"; // no git on this machine
  }
}

function packageVersion(root: string): string {
  try {
    const { name, version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    return `${name}@${version} (installed package)`;
  } catch {
    return "unknown";
  }
}

export function formatMachine(m: MachineInfo): string {
  return `machine: ${m.cpuModel}, ${m.cores} cores, Bun ${m.bun}, Linux ${m.kernel}, taskset ${m.taskset ? "yes" : "no (unpinned)"}, ` +
    `load average ${m.load.toFixed(2)} at start, a page fault ${Number.isNaN(m.pageFaultUs) ? "not measured" : `${m.pageFaultUs.toFixed(1)} us`}, idle cores: ${m.idle}, commit ${m.commit}, ` +
    `this process's allocator and compiler settings: ${m.allocator}`;
}

/** A one-line progress indicator on stderr: rewritten in place on a terminal, one line each otherwise. */
export function progress(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${text}`);
  else process.stderr.write(`${text}\n`);
}

/** Ends the progress line on a terminal. */
export function progressDone(): void {
  if (process.stderr.isTTY) process.stderr.write("\r\x1b[K");
}
