/**
 * Where the Bun binary is when this process is not Bun: a supervisor on Deno (docs/deno.md)
 * starts `runtime: bun` actors with a Bun it has to find, as a Bun supervisor finds Deno
 * (deno-runtime.ts). Bun is a dependency of the package (the `bun` npm package ships the
 * binary), found as the `hermes-mesh` launcher finds it (src/cli/launcher.mjs, plain
 * JavaScript for Node, hence the lookup is written twice).
 */
import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { spawnName, THIS_RUNTIME } from "./runtime-binary.ts";

const require = createRequire(import.meta.url);
let found: string | null | undefined;

/** How a user gets Bun when it is missing. */
export const BUN_INSTALL_HINT =
  "Bun is installed with hermes-mesh (the `bun` npm dependency): run `npm install` in the project " +
  "(`npm rebuild bun` if it ran with --ignore-scripts), or `npm install bun@1.4.5`, or set HERMES_BUN to a Bun binary";

/**
 * The Bun binary to start Bun actors with, or undefined when there is none: this process's own
 * on Bun; else $HERMES_BUN when set (and then only it: a setting that points nowhere is an
 * error, not a hint), the `bun` package's binary, its platform package's (as "bun" when that is
 * the PATH's, so that Deno's `--allow-run=bun` allows it), the PATH. Looked up once per process.
 *
 * @example
 * const bun = findBun(); // "/app/node_modules/bun/bin/bun.exe"
 */
export function findBun(): string | undefined {
  if (THIS_RUNTIME === "bun") return process.execPath;
  if (found !== undefined) return found ?? undefined;
  if (process.env.HERMES_BUN) {
    found = existsSync(process.env.HERMES_BUN) ? process.env.HERMES_BUN : null;
    return found ?? undefined;
  }
  const candidates: string[] = [];
  try {
    const bunPackage = dirname(require.resolve("bun/package.json"));
    candidates.push(join(bunPackage, "bin", "bun.exe")); // the name npm links on every platform
    // With --ignore-scripts the postinstall that places the binary never ran: the platform package has it.
    const fromBun = createRequire(join(bunPackage, "package.json"));
    const arch = process.arch === "arm64" ? "aarch64" : process.arch;
    const os = process.platform === "win32" ? "windows" : process.platform;
    for (const suffix of ["", "-musl", "-baseline"]) {
      try {
        candidates.push(join(dirname(fromBun.resolve(`@oven/bun-${os}-${arch}${suffix}/package.json`)), "bin", os === "windows" ? "bun.exe" : "bun"));
      } catch {
        // not installed for this platform variant
      }
    }
  } catch {
    // the bun package is missing: the PATH is left
  }
  // The package's bun.exe is a small text placeholder until its postinstall replaces it.
  const file = candidates.find((file) => existsSync(file) && statSync(file).size > 1_000_000);
  found = file === undefined ? (onPath() ? "bun" : null) : spawnName(file, "bun");
  return found ?? undefined;
}

/** Whether `bun` on the PATH runs; Deno refuses to look without --allow-run for it, which counts as no. */
function onPath(): boolean {
  try {
    return spawnSync("bun", ["--version"], { stdio: "ignore" }).status === 0;
  } catch {
    return false;
  }
}

/** The Bun binary, or code 10 saying how to install it (a mesh file asks for `runtime: bun`). */
export function requireBun(what: string): string {
  const bun = findBun();
  if (bun) return bun;
  throw new HermesError(ErrorCode.UNAVAILABLE, `${what} asks for runtime: bun, but no Bun binary was found. ${BUN_INSTALL_HINT}`, {
    resource: "bun",
  });
}
