/**
 * Where an actor process's start-up time and memory go: fresh Bun processes each import one
 * step of the actor host's module graph (cumulative: every step is a module the next ones
 * import) and report ms from process start to done, the import alone, and their memory (VmRSS
 * = RssAnon + RssFile). Steps run in a rotating order for `rounds` rounds; medians are shown.
 * The last two steps load the host as actor processes run it: bundled with bytecode and the
 * start-up cuts of src/supervisor/actor-host-bundle.ts. The restart scenario's breakdown shows
 * the same time from outside ("host code loaded" step, or a standby host's assignment read).
 *
 * Run: `bun bench/startup-profile.ts [rounds]` (default 10).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { bundleHost } from "../src/supervisor/actor-host-bundle.ts";
import { median } from "./lib/histogram.ts";
import { onExit } from "./lib/cleanup.ts";
import { rotated } from "./lib/scenario.ts";

const ROOT = join(import.meta.dir, "..");
const rounds = Number(process.argv[2] ?? 10);
// Under node_modules like the real bundle, so that msgpackr's native extractor resolves as there.
const BUNDLE_DIR = mkdtempSync(join(ROOT, "node_modules/.cache/hermes-mesh/profile-"));
onExit(() => rmSync(BUNDLE_DIR, { recursive: true, force: true }));
await bundleHost(join(ROOT, "src/actor/actor-host.ts"), BUNDLE_DIR);

/** [label, modules imported, in order]; paths relative to the repository root, or package names. */
const STEPS: ReadonlyArray<[string, string[]]> = [
  ["bare Bun", []],
  ["msgpackr", ["msgpackr"]],
  ["zod", ["zod"]],
  ["zod + msgpackr", ["zod", "msgpackr"]],
  ["mesh/envelope.ts (zod on demand)", ["./mesh/envelope.ts"]],
  ["mesh/frames.ts", ["./mesh/frames.ts"]],
  ["mesh/mesh-node.ts", ["./mesh/mesh-node.ts"]],
  ["src/actor/actor-host.ts (whole host)", ["./src/actor/actor-host.ts"]],
  ["host + actors/echo.ts", ["./src/actor/actor-host.ts", "./actors/echo.ts"]],
  // What an actor process runs: the host bundled with bytecode (src/supervisor/actor-host-bundle.ts).
  ["bundled host (bytecode)", [join(BUNDLE_DIR, "actor-host.js")]],
  ["bundled host + actors/echo.ts", [join(BUNDLE_DIR, "actor-host.js"), "./actors/echo.ts"]],
];

interface Reading {
  /** Wall ms from just before Bun.spawn to the child's report. */
  wallMs: number;
  /** Ms from the child's process start to done, as the child saw it. */
  sinceStartMs: number;
  importMs: number;
  rss: number;
  anon: number;
  file: number;
}

async function measure(modules: string[]): Promise<Reading> {
  const code = `const t = performance.now();
${modules.map((m) => `await import(${JSON.stringify(m)});`).join("\n")}
const done = performance.now();
const status = require("node:fs").readFileSync("/proc/self/status", "utf8");
const kb = (key) => Number(new RegExp("^" + key + ":\\\\s+(\\\\d+)", "m").exec(status)[1]) / 1024;
console.log(JSON.stringify({ sinceStartMs: done, importMs: done - t, rss: kb("VmRSS"), anon: kb("RssAnon"), file: kb("RssFile") }));`;
  const t0 = performance.now();
  const proc = Bun.spawn([process.execPath, "-e", code], { cwd: ROOT, stdout: "pipe", stderr: "inherit", stdin: "ignore" });
  const text = await new Response(proc.stdout).text();
  const wallMs = performance.now() - t0;
  if ((await proc.exited) !== 0) throw new Error(`importing ${modules.join(", ")} failed`);
  return { wallMs, ...JSON.parse(text) };
}

const readings = new Map<string, Reading[]>(STEPS.map(([label]) => [label, []]));
for (let round = 0; round < rounds; round++) {
  process.stderr.write(`round ${round + 1}/${rounds}\n`);
  for (const [label, modules] of rotated(STEPS, round)) readings.get(label)!.push(await measure(modules));
}

const row = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(42) : c.padStart(10))).join(" ");
console.log(`median of ${rounds} fresh processes per step`);
console.log(row(["step", "wall ms", "start ms", "import ms", "RSS MB", "anon MB", "file MB"]));
for (const [label] of STEPS) {
  const r = readings.get(label)!;
  const m = (key: keyof Reading) => median(r.map((x) => x[key])).toFixed(1);
  console.log(row([label, m("wallMs"), m("sinceStartMs"), m("importMs"), m("rss"), m("anon"), m("file")]));
}
