#!/usr/bin/env node
// The `hermes-mesh` command as npm installs it: plain JavaScript so that Node can start it with
// nothing else on the PATH. It finds the Bun binary installed with the package and runs the CLI
// (src/cli/main.ts) with it. Why a launcher and not `#!/usr/bin/env bun`: `npx`, `npm link` and
// `npm install -g` put only this file on the PATH, never Bun itself.
//
// Signals: SIGINT, SIGTERM and SIGHUP are passed on to the CLI, which stops its mesh cleanly,
// and the launcher exits with the CLI's status. If the launcher itself is killed (kill -9), the
// CLI notices that its parent is gone and stops the mesh on its own (src/cli/parent-watch.ts).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, "main.ts");
const require = createRequire(import.meta.url);

/** The first Bun that can run: $HERMES_BUN, the `bun` package's binary, its platform package, the PATH. */
function findBun() {
  const candidates = [];
  if (process.env.HERMES_BUN) candidates.push(process.env.HERMES_BUN);
  try {
    const bunPackage = dirname(require.resolve("bun/package.json"));
    candidates.push(join(bunPackage, "bin", "bun.exe")); // the name npm links on every platform
    // With --ignore-scripts the postinstall that places the binary never ran: use the platform package.
    const fromBun = createRequire(join(bunPackage, "package.json"));
    const arch = process.arch === "arm64" ? "aarch64" : process.arch;
    const os = process.platform === "win32" ? "windows" : process.platform;
    for (const suffix of ["", "-musl", "-baseline"]) {
      try {
        const platformPackage = dirname(fromBun.resolve(`@oven/bun-${os}-${arch}${suffix}/package.json`));
        candidates.push(join(platformPackage, "bin", os === "windows" ? "bun.exe" : "bun"));
      } catch {
        // not installed for this platform variant
      }
    }
  } catch {
    // the bun package is missing: fall through to the PATH
  }
  // The package's bun.exe is a small text placeholder until its postinstall replaces it.
  for (const file of candidates) {
    if (existsSync(file) && statSync(file).size > 1_000_000) return file;
  }
  const onPath = spawnSync("bun", ["--version"], { stdio: "ignore" });
  if (onPath.status === 0) return "bun";
  return undefined;
}

const bun = findBun();
if (!bun) {
  console.error(
    "hermes-mesh: cannot find the Bun runtime it runs on. It is installed with the package\n" +
      "(the `bun` dependency); if npm ran with --ignore-scripts, run `npm rebuild bun`, or set\n" +
      "HERMES_BUN to a Bun binary.",
  );
  process.exit(127);
}

// The runtime settings every member of a mesh starts with, MEMBER_RUNTIME_DEFAULTS in
// src/supervisor/member-process.ts (test/cli/stop-with-launcher.test.ts checks the two agree):
// Bun's allocator returns the free memory of pages in use at most every 2 s of waiting, not
// every 100 ms (round trips paid it back in page faults), and JavaScriptCore compiles a
// function after 2,000 and 10,000 runs, not 500 and 1,000 (code run now and then stays
// uncompiled). A value in the environment wins.
const MEMBER_RUNTIME_DEFAULTS = {
  MIMALLOC_PURGE_HOLES_MIN_INTERVAL: "2000",
  BUN_JSC_thresholdForJITAfterWarmUp: "2000",
  BUN_JSC_thresholdForOptimizeAfterWarmUp: "10000",
};
const env = { ...MEMBER_RUNTIME_DEFAULTS, ...process.env };
const child = spawn(bun, [cli, ...process.argv.slice(2)], { stdio: "inherit", env });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  // A terminal's Ctrl-C reaches the whole process group; the CLI ignores a second copy.
  process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => {
  console.error(`hermes-mesh: cannot start ${bun}: ${error.message}`);
  process.exit(127);
});
child.on("exit", (code, signal) => {
  if (signal) {
    // Exit the way the CLI did, so a caller sees the same signal.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exit(code ?? 1);
});
