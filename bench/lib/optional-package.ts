/**
 * Packages only some peers or extras need (the nats client, @resvg/resvg-js for PNG charts):
 * optionalDependencies of hermes-mesh, so an install may lack one (`--omit=optional`, or a
 * platform without a prebuilt binary). Their users import them lazily, inside the adapter, and
 * ask here first: a missing one skips its peer or extra with a line saying how to install it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The pinned versions, read from the package's own package.json (the one source of them). */
function pinnedVersion(name: string): string | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(import.meta.dir, "../../package.json"), "utf8"));
    return manifest.optionalDependencies?.[name] ?? manifest.dependencies?.[name] ?? manifest.devDependencies?.[name];
  } catch {
    return undefined;
  }
}

/**
 * Why `name` cannot be imported from bench/, with the command that installs it; undefined when it resolves.
 *
 * @example
 * missingPackage("nats"); // "the nats package is not installed (npm install nats@2.29.3)"
 */
export function missingPackage(name: string): string | undefined {
  try {
    Bun.resolveSync(name, import.meta.dir);
    return undefined;
  } catch {
    const version = pinnedVersion(name);
    return `the ${name} package is not installed (npm install ${version ? `${name}@${version}` : name})`;
  }
}
