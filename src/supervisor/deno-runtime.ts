/**
 * Running actors on Deno: where the Deno binary is, and the command line of a Deno actor host
 * with the least permissions that work (docs/deno.md). Deno is a dependency of the package
 * (the `deno` npm package ships the binary in a platform package, as `bun` does).
 */
import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { spawnName, THIS_RUNTIME } from "./runtime-binary.ts";

const require = createRequire(import.meta.url);
let found: string | null | undefined;

/** How a user gets Deno when it is missing. */
export const DENO_INSTALL_HINT =
  "Deno is installed with hermes-mesh (the `deno` npm dependency): run `npm install` in the project, " +
  "or `npm install deno@2.9.6`, or set HERMES_DENO to a Deno binary";

/**
 * The Deno binary to start actors with, or undefined when there is none: $HERMES_DENO when set
 * (and then only it: a setting that points nowhere is an error, not a hint), else on Deno this
 * process's own binary (as "deno" when that is the PATH's, so that `--allow-run=deno` allows it), else the binary of the `deno` package's
 * platform package, the `deno` package's own copy, the PATH. Looked up once per process.
 *
 * @example
 * const deno = findDeno(); // "/app/node_modules/@deno/linux-x64-glibc/deno"
 */
export function findDeno(): string | undefined {
  if (found !== undefined) return found ?? undefined;
  const candidates: string[] = [];
  if (process.env.HERMES_DENO) {
    found = existsSync(process.env.HERMES_DENO) ? process.env.HERMES_DENO : null;
    return found ?? undefined;
  }
  if (THIS_RUNTIME === "deno") return (found = spawnName(process.execPath, "deno"));
  try {
    const denoPackage = dirname(require.resolve("deno/package.json"));
    const fromDeno = createRequire(join(denoPackage, "package.json"));
    const arch = process.arch === "arm64" ? "arm64" : "x64";
    for (const platform of [`${process.platform}-${arch}-glibc`, `${process.platform}-${arch}`]) {
      try {
        candidates.push(join(dirname(fromDeno.resolve(`@deno/${platform}/package.json`)), "deno"));
      } catch {
        // not installed for this platform
      }
    }
    candidates.push(join(denoPackage, "deno"));
  } catch {
    // the deno package is missing: the PATH is left
  }
  // A real binary is tens of MB; a placeholder or a script wrapper is not what we want to exec.
  found = candidates.find((file) => existsSync(file) && statSync(file).size > 1_000_000) ?? null;
  if (found === null && spawnSync("deno", ["--version"], { stdio: "ignore" }).status === 0) found = "deno";
  return found ?? undefined;
}

/** The Deno binary, or code 10 saying how to install it (a mesh file asks for `runtime: deno`). */
export function requireDeno(what: string): string {
  const deno = findDeno();
  if (deno) return deno;
  throw new HermesError(ErrorCode.UNAVAILABLE, `${what} asks for runtime: deno, but no Deno binary was found. ${DENO_INSTALL_HINT}`, {
    resource: "deno",
  });
}

/**
 * `deno run` with the permissions an actor host needs and nothing more: read (its module, the
 * package, node_modules), write to the mesh directory only (sockets, logs, the durable store),
 * the environment (its settings come in variables), net (node:net's Unix sockets ask for it),
 * sys (os.hostname for logs). `--no-prompt`: a permission Deno refuses fails at once, with the
 * flag named in the error, instead of waiting on a terminal nobody watches. `extra`: the
 * actor's `deno_permissions` from the mesh file, given after the defaults.
 *
 * @example
 * denoHostCommand("/usr/bin/deno", "/app/src/actor/host-main.ts", "/tmp/mesh"); // ["/usr/bin/deno", "run", "--no-prompt", ...]
 */
export function denoHostCommand(deno: string, hostSource: string, meshDir: string, extra: readonly string[] = []): string[] {
  // Deno takes the last of repeated flags, so a --allow-write of the actor's keeps the mesh dir too.
  const write = extra.filter((flag) => flag.startsWith("--allow-write=")).map((flag) => flag.slice("--allow-write=".length));
  const others = extra.filter((flag) => !flag.startsWith("--allow-write="));
  return [deno, "run", "--no-prompt", "--quiet", "--allow-read", `--allow-write=${[meshDir, ...write].join(",")}`, "--allow-env", "--allow-net", "--allow-sys=hostname,osRelease,uid,gid", ...others, hostSource];
}
