import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Logger } from "../../mesh/logger.ts";

const ROOT = join(import.meta.dir, "../..");
const HOST_SOURCE = join(ROOT, "src/actor/host-main.ts");

let entry: Promise<string> | undefined;

/**
 * The file an actor process runs: the actor host bundled into one CommonJS file with Bun's
 * bytecode, built once per version of the sources and kept under node_modules/.cache. Why:
 * loading the host from source (msgpackr, zod, the mesh code) took about 40 ms of every
 * restart; the bundle loads in about 20 (bench/startup-profile.ts). msgpackr's native string
 * extractor stays outside the bundle and is found from node_modules as before. Falls back to
 * the source entry if the build fails, and HERMES_ACTOR_HOST=source forces the source.
 */
export function actorHostEntry(log?: Logger): Promise<string> {
  if (process.env.HERMES_ACTOR_HOST === "source") return Promise.resolve(HOST_SOURCE);
  return (entry ??= build(log).catch((error) => {
    log?.warn("actor host bundle failed; running actors from source", { error: String(error) });
    return HOST_SOURCE;
  }));
}

async function build(log?: Logger): Promise<string> {
  const dir = join(cacheRoot(), `actor-host-${sourceHash()}`);
  const file = join(dir, "host-main.js");
  if (existsSync(file)) return file;
  const staging = `${dir}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  const result = await Bun.build({
    entrypoints: [HOST_SOURCE],
    target: "bun",
    format: "cjs",
    bytecode: true,
    outdir: staging,
    external: ["msgpackr-extract"],
  });
  if (!result.success) throw new Error(result.logs.map(String).join("\n"));
  try {
    renameSync(staging, dir);
  } catch {
    // Another process built the same version first: use theirs.
    rmSync(staging, { recursive: true, force: true });
  }
  log?.debug("actor host bundled", { file });
  pruneOldBundles(dirname(dir), dir);
  return file;
}

/**
 * Each change of the sources builds a new bundle; without pruning a working copy's cache grows
 * by a few MB per edit. The newest few stay: a mesh of an older version still running restarts
 * its actors from its own.
 */
function pruneOldBundles(root: string, current: string, keep = 4): void {
  try {
    const bundles = readdirSync(root)
      .filter((name) => name.startsWith("actor-host-") && !name.endsWith(".tmp"))
      .map((name) => join(root, name))
      .filter((path) => path !== current)
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
    for (const old of bundles.slice(keep - 1)) rmSync(old, { recursive: true, force: true });
  } catch {
    // Best effort: a cache that cannot be pruned still works.
  }
}

/** node_modules/.cache/hermes-mesh of this installation (so `msgpackr-extract` resolves), else the temp dir. */
function cacheRoot(): string {
  for (let dir = ROOT; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "node_modules"))) {
      const cache = join(dir, "node_modules", ".cache", "hermes-mesh");
      mkdirSync(cache, { recursive: true });
      return cache;
    }
    if (dirname(dir) === dir) return join(tmpdir(), "hermes-mesh-cache");
  }
}

/** Names, sizes and mtimes of every source file the host can load, with the Bun version. */
function sourceHash(): string {
  const hash = createHash("sha256").update(Bun.version);
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const stat = statSync(path);
      if (stat.isDirectory()) walk(path);
      else if (name.endsWith(".ts")) hash.update(`${path}:${stat.size}:${stat.mtimeMs}\n`);
    }
  };
  walk(join(ROOT, "src"));
  walk(join(ROOT, "mesh"));
  hash.update(String(statSync(join(ROOT, "package.json")).mtimeMs));
  return hash.digest("hex").slice(0, 16);
}
