/**
 * Which runtime this process runs on, and how to name a runtime's binary in a spawn so that
 * Deno's `--allow-run=<name>` allows it (a supervisor on Deno, docs/deno.md).
 */
import { existsSync, realpathSync } from "node:fs";
import { delimiter, join } from "node:path";

/**
 * The runtime of this process: "bun" or "deno" (nothing else runs the supervisor).
 *
 * @example
 * if (THIS_RUNTIME === "deno") console.log("no standby host here");
 */
export const THIS_RUNTIME: "bun" | "deno" = typeof Bun === "undefined" ? "deno" : "bun";

/**
 * `name` when the first `name` on the PATH is the file `binary` (itself or a link to it), else
 * `binary`. Why: Deno's `--allow-run=deno` allows the PATH's `deno` as found, often a symlink
 * (node_modules/.bin/deno in an npm script, a package manager's link), and only a spawn by that
 * name matches it; the resolved path of the binary does not. A spawn by name runs the same file.
 *
 * @example
 * spawnName("/app/node_modules/deno/deno", "deno"); // "deno" in an npm script
 */
export function spawnName(binary: string, name: string): string {
  const file = process.platform === "win32" ? `${name}.exe` : name;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const candidate = join(dir, file);
    if (!dir || !existsSync(candidate)) continue;
    try {
      return realpathSync(candidate) === realpathSync(binary) ? name : binary;
    } catch {
      return binary;
    }
  }
  return binary;
}
