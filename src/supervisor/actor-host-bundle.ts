import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { BunPlugin } from "bun";
import type { Logger } from "../../mesh/logger.ts";
import { STRINGS_IN_BUNDLE } from "../../mesh/msgpack-values.ts";

const ROOT = join(import.meta.dirname, "../..");
/** The actor host's source entry: what Deno actors run (Deno runs TypeScript itself), and Bun's fallback. */
export const HOST_SOURCE = join(ROOT, "src/actor/host-main.ts");
const MSGPACK_VALUES = join(ROOT, "mesh/msgpack-values.ts");

/** The bundles built by this process, by variant: with the NATS client, or for a mesh on sockets. */
const entries = new Map<string, Promise<string>>();

/** What the actor host of a mesh needs: the NATS client only in a mesh over NATS (mesh.transport: nats). */
export interface HostVariant {
  nats?: boolean;
}

/**
 * The file an actor process runs: the actor host bundled into one CommonJS file with Bun's
 * bytecode, built once per version of the sources and kept under node_modules/.cache. Why:
 * loading the host from source (msgpackr and the mesh code) takes about 24 ms of every
 * start; the bundle, with the start-up cuts of `startupCuts`, about 7
 * (bench/startup-profile.ts). Falls back to the source entry if the build fails, and
 * HERMES_ACTOR_HOST=source forces the source. A supervisor on Deno never builds (Bun.build is
 * Bun's): its Bun actors, if any, run from source too. A mesh on sockets gets a bundle without
 * the NATS client: carried along unused, it cost each idle actor 1.3 MB of memory and its
 * start about a tenth more time (bench/footprint.bench.ts).
 */
export function actorHostEntry(log?: Logger, variant: HostVariant = {}): Promise<string> {
  if (process.env.HERMES_ACTOR_HOST === "source" || typeof Bun === "undefined") return Promise.resolve(HOST_SOURCE);
  const name = variant.nats ? "nats" : "sockets";
  let entry = entries.get(name);
  if (!entry) {
    entry = build(name, variant, log).catch((error) => {
      log?.warn("actor host bundle failed; running actors from source", { error: String(error) });
      return HOST_SOURCE;
    });
    entries.set(name, entry);
  }
  return entry;
}

async function build(name: string, variant: HostVariant, log?: Logger): Promise<string> {
  const dir = join(cacheRoot(), `actor-host-${sourceHash()}-${name}`);
  const file = join(dir, "host-main.js");
  if (existsSync(file)) return file;
  const staging = `${dir}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  await bundleHost(HOST_SOURCE, staging, variant);
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
 * Bundles `entry` as the actor host is bundled (one CommonJS file with Bun's bytecode beside
 * it, with the start-up cuts below) into `outdir`; bench/startup-profile.ts measures the same
 * build. Without `variant.nats` the NATS transport and registry are left out (see startupCuts).
 * Rejects with the build's messages.
 *
 * @example
 * await bundleHost("src/actor/actor-host.ts", "/tmp/host-bundle"); // /tmp/host-bundle/actor-host.js
 */
export async function bundleHost(entry: string, outdir: string, variant: HostVariant = {}): Promise<void> {
  const result = await Bun.build({
    entrypoints: [entry],
    target: "bun",
    format: "cjs",
    bytecode: true,
    outdir,
    plugins: [startupCuts(variant)],
  });
  if (!result.success) throw new Error(result.logs.map(String).join("\n"));
}

/** Builtins an actor's start-up does not call: on Bun the sockets are Bun's; hashes come with the first messages. */
const DEFERRED_BUILTINS = ["net", "crypto"];
const DEFERRED = "hermes-deferred";

/**
 * What the bundle leaves out of an actor's start-up, measured by bench/startup-profile.ts:
 * - node:net (the socket adapter's fallback for runtimes other than Bun) and node:crypto (trace
 *   ids of handled messages, the token check) cost about 5 ms to load together: this
 *   repository's imports of them get a stand-in whose functions load the builtin on their
 *   first call (node:crypto with the first handled message; a standby host loads it while it
 *   waits). Only functions are deferred: importing anything else from them fails the build
 *   (and actors run from source, with a warning). Bun resolves builtins before any plugin sees
 *   them, so the importing source gets the stand-in's name in place of the builtin's.
 * - msgpackr's native string extractor, found at run time by node-gyp-build (about 5 ms) and
 *   loaded with libstdc++: msgpackr gets mesh/msgpack-values.ts's reader as `msgpackr-extract`
 *   instead (ownStringReader).
 * - Without `variant.nats`, mesh/nats-transport.ts and mesh/nats-registry.ts (and with them the
 *   NATS client) are replaced by stand-ins whose functions throw: a mesh on sockets never calls
 *   them (the supervisor picks the variant from the mesh file, and members join over NATS only
 *   when the mesh runs on it).
 */
function startupCuts(variant: HostVariant): BunPlugin {
  const imports = new RegExp(`(from\\s*)(["'])(?:node:)?(${DEFERRED_BUILTINS.join("|")})\\2`, "g");
  const root = ROOT.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const ownSources = new RegExp(`^${root}/(src|mesh)/.*\\.ts$`);
  return {
    name: "hermes-actor-startup",
    setup(build) {
      build.onLoad({ filter: ownSources }, async (args) => {
        const text = await Bun.file(args.path).text();
        return { contents: text.replace(imports, `$1"${DEFERRED}:$3"`), loader: "ts" };
      });
      build.onResolve({ filter: new RegExp(`^${DEFERRED}:`) }, (args) => ({ path: args.path.slice(DEFERRED.length + 1), namespace: DEFERRED }));
      build.onLoad({ filter: /.*/, namespace: DEFERRED }, (args) => ({ contents: deferredBuiltin(args.path), loader: "js" }));
      if (!variant.nats) {
        build.onResolve({ filter: NATS_MODULES }, (args) => ({ path: join(dirname(args.importer), args.path), namespace: NO_NATS }));
        build.onLoad({ filter: /.*/, namespace: NO_NATS }, async (args) => ({ contents: withoutNats(await Bun.file(args.path).text()), loader: "js" }));
      }
      build.onResolve({ filter: /^msgpackr-extract$/ }, () => ({ path: "msgpackr-extract", namespace: "hermes-strings" }));
      build.onLoad({ filter: /.*/, namespace: "hermes-strings" }, () => ({ contents: ownStringReader(), loader: "js" }));
    },
  };
}

const NATS_MODULES = /^\.\/nats-(transport|registry)\.ts$/;
const NO_NATS = "hermes-no-nats";

/** A stand-in for a NATS module of this repository: each of its exports, every one a function that throws. */
function withoutNats(source: string): string {
  const names = [...source.matchAll(/^export (?:async )?(?:function|const|class|let) (\w+)/gm)].map((m) => m[1]!);
  return [
    `const refuse = () => { throw new Error("this actor host was bundled for a mesh on sockets, without the NATS client: a mesh over NATS starts its actors with the NATS bundle"); };`,
    ...names.map((name) => `export function ${name}() { return refuse(); }`),
  ].join("\n");
}

/** A module with every function of builtin `name`, each loading the builtin on first use. */
function deferredBuiltin(name: string): string {
  const builtin = createRequire(import.meta.url)(`node:${name}`) as Record<string, unknown>;
  const functions = Object.keys(builtin).filter((key) => typeof builtin[key] === "function");
  return [
    // A computed require: the bundler would take a literal one for this very module.
    `const id = ${JSON.stringify(`node:${name}`)}; let loaded; const load = () => (loaded ??= require(id));`,
    // Classes too (net.Socket): `new` on a stand-in constructs the real one.
    ...functions.map((key) => `export function ${key}(...args) { return new.target ? Reflect.construct(load().${key}, args, new.target) : load().${key}.apply(this, args); }`),
    `export default new Proxy({}, { get: (_, key) => load()[key] });`,
  ].join("\n");
}

/**
 * `msgpackr-extract` as the bundle sees it: a module whose `extractStrings` is readStringAt of
 * mesh/msgpack-values.ts, which msgpackr installs as its string reader, so an actor never loads
 * the native addon (an N-API module that brought libstdc++ along; readStringAt is faster in
 * place, docs/benchmarks.md). Required on the first call, not at load: msgpackr asks for this
 * module while it initialises, before mesh/msgpack-values.ts (which imports msgpackr) can run.
 */
function ownStringReader(): string {
  return `globalThis[Symbol.for(${JSON.stringify(STRINGS_IN_BUNDLE.description)})] = true;
let read;
module.exports = { extractStrings: (start, end, buffer) => (read ??= require(${JSON.stringify(MSGPACK_VALUES)}).readStringAt)(start, end, buffer) };`;
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
