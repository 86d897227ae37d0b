import { readFileSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import { validatePattern } from "../../mesh/topics.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { groupId } from "../../mesh/socket-access.ts";
import { BUN_INSTALL_HINT, findBun } from "./bun-runtime.ts";
import { THIS_RUNTIME } from "./runtime-binary.ts";
import { DENO_INSTALL_HINT, findDeno } from "./deno-runtime.ts";
import { formatYamlPath, issueMessage, sourceError, valueAt, YamlSource, type SourceIssue, type YamlPath } from "./yaml-source.ts";

// Schema helpers. Every leaf carries its own "expected ..." message; the loader appends what
// it got and where, so the schema stays the one place that says what a mesh file may hold.
const expected = (what: string) => ({ error: `expected ${what}` });
const intIn = (min: number, max: number) => {
  const message = expected(`an integer from ${min} to ${max}`);
  return z.int(message).min(min, message).max(max, message);
};
const matching = (re: RegExp, what: string) => z.string(expected(what)).regex(re, expected(what));
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) => z.enum(values, expected(`one of ${values.join(", ")}`));
const list = <T extends z.ZodType>(item: T) => z.array(item, expected("a list"));
const mapError = (keys: string[]) => ({
  error: (issue: z.core.$ZodRawIssue) =>
    issue.code === "unrecognized_keys" ? `unknown key (expected one of: ${keys.join(", ")})` : "expected a map",
});
const map = <S extends z.core.$ZodLooseShape>(shape: S) => z.strictObject(shape, mapError(Object.keys(shape)));

const Name = matching(/^[a-z][a-z0-9_-]*$/, "a name matching [a-z][a-z0-9_-]*");
const Capability = matching(/^[A-Za-z0-9_.:/-]+$/, "a capability name of [A-Za-z0-9_.:/-]");
const Pattern = z.string(expected("a topic pattern")).superRefine((pattern, ctx) => {
  try {
    validatePattern(pattern);
  } catch (error) {
    ctx.addIssue({ code: "custom", message: (error as Error).message });
  }
});
const AllowedHost = matching(
  /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*|\[?[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\]?)$/,
  'a host name or address without a port, "*.example.com", or "*"',
);
const AllowedOrigin = matching(
  /^(\*|null|https?:\/\/([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?)$/,
  'an origin such as "https://ops.example.com:8443" (scheme, host, optional port; no path), "null", or "*"',
);
const Shutdown = '(milliseconds, an integer from 0) or "brutal_kill"';
/** What an actor process runs on (docs/deno.md). */
const Runtime = oneOf(["bun", "deno"]);

/**
 * One actor (a pool of `pool` identical instances) in a supervisor's children.
 *
 * @example
 * ActorSpecSchema.parse({ actor: "echo", module: "./echo.ts" }).pool; // 1
 */
export const ActorSpecSchema = map({
  actor: Name,
  module: z.string(expected("a module path")).min(1, expected("a module path")),
  pool: intIn(1, 64).default(1),
  // Further instances of the pool that run outside the tree (`hermes-mesh actor --name <actor>#<i>`).
  external: intIn(0, 64).default(0),
  capabilities: list(Capability).default(() => []),
  subscribe: list(Pattern).default(() => []),
  restart: oneOf(["permanent", "transient", "temporary"]).default("permanent"),
  shutdown_ms: z.union([z.int(expected(Shutdown)).min(0, expected(Shutdown)), z.literal("brutal_kill", expected(Shutdown))], expected(Shutdown)).default(5000),
  // No default here: the module's own `concurrency` applies unless the mesh file sets one (then 1).
  concurrency: intIn(1, 1024).optional(),
  durable: z.boolean(expected("true or false")).default(false),
  // No default here: `mesh.runtime` applies unless the actor sets its own.
  runtime: Runtime.optional(),
  // Deno permissions beyond the actor host's own (docs/deno.md), e.g. "--allow-write=/data".
  deno_permissions: list(matching(/^--allow-[a-z-]+(=.+)?$/, 'a Deno permission flag such as "--allow-write=/data" or "--allow-run=git"')).default(() => []),
  window: intIn(1, 1_048_576).optional(),
  env: z.record(matching(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name"), z.string(expected("a string (quote numbers and booleans)")), expected("a map")).optional(),
});

const Backoff = map({
  initial_ms: intIn(0, 3_600_000).default(10),
  max_ms: intIn(0, 3_600_000).default(1000),
  jitter: z.number(expected("a number from 0 to 1")).min(0, expected("a number from 0 to 1")).max(1, expected("a number from 0 to 1")).default(0.2),
}).refine((b) => b.max_ms >= b.initial_ms, { message: "max_ms must not be below initial_ms", path: ["max_ms"] });

const Strategy = oneOf(["one_for_one", "one_for_all", "rest_for_one"]).default("one_for_one");
const Intensity = intIn(0, 1000).default(1);
const PeriodMs = intIn(1, 86_400_000).default(5000);
const BackoffField = Backoff.prefault({});

/**
 * A nested supervisor: its own strategy and intensity over its own children. (Written out
 * rather than built with `map()` or a spread: TypeScript infers a recursive schema's type only
 * from a plain object literal with an annotated getter.)
 *
 * @example
 * SupervisorSpecSchema.parse({ supervisor: "workers", children: [] }).strategy; // "one_for_one"
 */
export const SupervisorSpecSchema = z.strictObject(
  {
    supervisor: Name,
    strategy: Strategy,
    intensity: Intensity,
    period_ms: PeriodMs,
    backoff: BackoffField,
    get children(): z.ZodArray<z.ZodUnion<readonly [typeof ActorSpecSchema, typeof SupervisorSpecSchema]>> {
      return list(ChildSpecSchema);
    },
  },
  mapError(["supervisor", "strategy", "intensity", "period_ms", "backoff", "children"]),
);

/**
 * A child in start order: an actor or a nested supervisor, told apart by their `actor` / `supervisor` key.
 *
 * @example
 * isActorSpec(ChildSpecSchema.parse({ actor: "echo", module: "./echo.ts" })); // true
 */
export const ChildSpecSchema = z.union([ActorSpecSchema, SupervisorSpecSchema], expected("a child: a map with an `actor` or a `supervisor` key"));

/**
 * The whole mesh file: the single source of truth for its shape and defaults. Use
 * `parseMeshFile` to validate (it locates errors and checks names and modules too).
 *
 * @example
 * // A JSON Schema for editors, derived rather than written by hand:
 * const jsonSchema = z.toJSONSchema(MeshFileSchema, { io: "input" });
 */
/** `mesh.nats`: where the NATS servers are and how to log in (docs/nats.md). */
const NatsSettings = map({
  servers: list(matching(/^(nats|tls|wss?):\/\/.+$/, 'a NATS server URL such as "nats://127.0.0.1:4222"')).min(1, expected("at least one server URL")),
  // Names of environment variables, never the secrets themselves.
  user_env: matching(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name").optional(),
  pass_env: matching(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name").optional(),
  token_env: matching(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name").optional(),
  // Passed through to the client's `tls` option (e.g. { caFile, certFile, keyFile }).
  tls: z.record(z.string(), z.unknown(), expected("a map")).optional(),
  replicas: z.union([z.literal(1), z.literal(3), z.literal(5)], expected("1, 3 or 5")).default(1),
  // Letters each member's dead subject keeps, newest first (docs/nats.md, "Dead letters").
  dead_letters_kept: intIn(0, 1_000_000_000).optional(),
  // This host's name in the mesh (ps shows it); default the machine's host name.
  host: matching(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "a host name").optional(),
});

/**
 * `mesh.socket_group`: the group that may reach the mesh's sockets besides its owner (docs/actors.md,
 * "Sharing a mesh with other users"). A name (looked up in /etc/group when the file is loaded)
 * or a numeric gid; what comes out is the gid.
 */
const SocketGroup = z
  .union([intIn(0, 4_294_967_294), matching(/^[A-Za-z0-9_][A-Za-z0-9_.-]*\$?$/, "a group name or a numeric gid")], expected("a group name or a numeric gid"))
  .transform((group, ctx) => {
    if (typeof group === "number") return group;
    if (/^\d+$/.test(group)) return Number(group);
    const gid = groupId(group);
    if (gid !== undefined) return gid;
    ctx.addIssue({ code: "custom", message: `no group named "${group}" in /etc/group (give a group from elsewhere, such as LDAP, by its numeric gid)` });
    return z.NEVER;
  });

export const MeshFileSchema = map({
  mesh: map({
    name: matching(/^[a-z0-9-]+$/, "a mesh name matching [a-z0-9-]+"),
    dir: z.string(expected("a directory path")).min(1, expected("a directory path")).optional(),
    token_env: matching(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name").optional(),
    heartbeat_ms: intIn(10, 600_000).default(1000),
    // How long an actor may go without a heartbeat before it is found hung (killed and restarted).
    hung_after_ms: intIn(100, 3_600_000).optional(),
    events: z.boolean(expected("true or false")).default(true),
    scheduler: oneOf(["least_loaded", "round_robin", "weighted"]).default("least_loaded"),
    // The supervisor's own runtime: the one this machine surely has (a Deno-only box may have no Bun).
    runtime: Runtime.default(THIS_RUNTIME),
    // How members reach each other: Unix sockets on this host (the default), or NATS JetStream across hosts.
    transport: oneOf(["unix", "nats"]).default("unix"),
    nats: NatsSettings.optional(),
    // Who besides the owner may connect: the members of this group (default: nobody).
    socket_group: SocketGroup.optional(),
  })
    .refine((m) => m.transport !== "nats" || m.nats !== undefined, { message: "transport: nats needs a `nats` section with `servers`", path: ["nats"] })
    .refine((m) => m.hung_after_ms === undefined || m.hung_after_ms >= 2 * m.heartbeat_ms, {
      message: "hung_after_ms must be at least twice heartbeat_ms: one late heartbeat is not a hang",
      path: ["hung_after_ms"],
    }),
  gateway: map({
    port: intIn(0, 65_535).default(8000),
    host: z.string(expected("a host name or address")).min(1, expected("a host name or address")).default("127.0.0.1"),
    token_env: matching(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name").optional(),
    body_limit_bytes: intIn(1024, 64 * 1024 * 1024).default(1024 * 1024),
    // Served besides the loopback names and `host` (docs/gateway.md, "Who may call").
    allowed_hosts: list(AllowedHost).default(() => []),
    allowed_origins: list(AllowedOrigin).default(() => []),
  }).optional(),
  supervisor: map({ strategy: Strategy, intensity: Intensity, period_ms: PeriodMs, backoff: BackoffField, children: list(ChildSpecSchema) }),
});

/** A mesh file as loaded and validated: the mesh settings, the gateway and the supervisor tree. */
export type MeshFile = z.output<typeof MeshFileSchema>;
export type ActorSpec = z.output<typeof ActorSpecSchema>;
export type SupervisorSpec = z.output<typeof SupervisorSpecSchema>;
export type ChildSpec = ActorSpec | SupervisorSpec;
/** The root supervisor: a supervisor without a name of its own. */
export type RootSupervisorSpec = MeshFile["supervisor"];

/** One problem found in a mesh file (1-based line and column), as listed in the error's `issues`. */
export type MeshFileIssue = Omit<SourceIssue, "node">;

/**
 * Reads and validates a mesh file. Module paths and `mesh.dir` come back absolute, resolved
 * against the file's directory. Throws HermesError code 2 listing every problem, one per line.
 *
 * @example
 * const mesh = loadMeshFile("actors/mesh.yaml");
 * for (const actor of listActors(mesh)) console.log(actor.actor, actor.module, actor.pool);
 */
export function loadMeshFile(path: string): MeshFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new HermesError(ErrorCode.INVALID_REQUEST, `${path}: cannot read the mesh file (${reason})`, { reason, file: path });
  }
  return parseMeshFile(text, path);
}

/**
 * Validates mesh-file text; `fileName` names it in messages and anchors relative paths.
 *
 * @example
 * parseMeshFile("mesh: { name: demo }\nsupervisor: { children: [] }\n", "/srv/mesh.yaml").mesh.heartbeat_ms; // 1000
 * // A bad value throws: "mesh.yaml:12:7: supervisor.children[1].pool: expected an integer from 1 to 64, got \"two\""
 */
export function parseMeshFile(text: string, fileName: string): MeshFile {
  const source = YamlSource.parse(text, "mesh file");
  if (source.syntaxIssues.length > 0) throw sourceError(fileName, source.syntaxIssues);
  const raw = source.data;
  const baseDir = dirname(resolve(fileName));
  const found: Found[] = [];
  const result = MeshFileSchema.safeParse(raw);
  if (!result.success) flatten(result.error.issues, [], raw, found);
  checkNamesAndModules(raw, baseDir, found, (path) => source.where(path));
  if (result.success) checkRuntimes(raw, found);
  if (found.length > 0) {
    throw sourceError(fileName, found.map((f) => ({
      ...source.where(f.path, f.atKey),
      path: formatYamlPath(f.path) || "(top level)",
      message: issueMessage(f.message, f.atKey ? f.path.at(-1) : valueAt(raw, f.path)),
    })));
  }
  const meshFile = result.data!;
  for (const actor of listActors(meshFile)) actor.runtime ??= meshFile.mesh.runtime;
  if (meshFile.mesh.dir !== undefined) meshFile.mesh.dir = resolve(baseDir, meshFile.mesh.dir);
  for (const actor of listActors(meshFile)) actor.module = resolve(baseDir, actor.module);
  return meshFile;
}

/**
 * Narrows a child to an actor.
 *
 * @example
 * for (const child of mesh.supervisor.children) if (isActorSpec(child)) console.log(child.module);
 */
export function isActorSpec(child: ChildSpec): child is ActorSpec {
  return "actor" in child;
}

/**
 * Every actor in the tree, depth-first in start order.
 *
 * @example
 * listActors(mesh).map((a) => a.actor); // ["echo", "ocr", "tts"]
 */
export function listActors(meshFile: MeshFile): ActorSpec[] {
  const out: ActorSpec[] = [];
  const walk = (children: ChildSpec[]) => {
    for (const child of children) isActorSpec(child) ? out.push(child) : walk(child.children);
  };
  walk(meshFile.supervisor.children);
  return out;
}

interface Found {
  path: YamlPath;
  message: string;
  /** Point at the key itself rather than its value (unknown keys, bad record keys). */
  atKey: boolean;
}

/** Turns zod issues into located findings, descending into the branch of a child union the user meant. */
function flatten(issues: readonly z.core.$ZodIssue[], base: YamlPath, raw: unknown, found: Found[]): void {
  for (const issue of issues) {
    const path = [...base, ...(issue.path as YamlPath)];
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) found.push({ path: [...path, key], message: issue.message, atKey: true });
    } else if (issue.code === "invalid_key") {
      found.push({ path, message: issue.issues[0]?.message ?? issue.message, atKey: true });
    } else if (issue.code === "invalid_union" && issue.errors.length === 2 && isRecord(valueAt(raw, path))) {
      const value = valueAt(raw, path) as Record<string, unknown>;
      const branch = "supervisor" in value ? 1 : "actor" in value ? 0 : -1;
      if (branch >= 0) flatten(issue.errors[branch]!, path, raw, found);
      else found.push({ path, message: "a child needs an `actor` or a `supervisor` key", atKey: false });
    } else {
      found.push({ path, message: issue.message, atKey: false });
    }
  }
}

/** Checks zod cannot make alone: names unique across the whole tree, and modules that exist. */
function checkNamesAndModules(raw: unknown, baseDir: string, found: Found[], at: (path: YamlPath) => { line: number; col: number }): void {
  const seen = new Map<string, YamlPath>();
  const walk = (children: unknown, path: YamlPath) => {
    if (!Array.isArray(children)) return;
    children.forEach((child, i) => {
      if (!isRecord(child)) return;
      const here = [...path, i];
      const key = typeof child.supervisor === "string" ? "supervisor" : typeof child.actor === "string" ? "actor" : undefined;
      if (key) {
        const name = child[key] as string;
        const first = seen.get(name);
        if (first) {
          const { line, col } = at(first);
          found.push({ path: [...here, key], message: `duplicate name "${name}" (first declared at line ${line}, column ${col})`, atKey: false });
        } else seen.set(name, [...here, key]);
      }
      if (key === "actor" && typeof child.module === "string" && child.module.length > 0) {
        const module = resolve(baseDir, child.module);
        if (!isFile(module)) found.push({ path: [...here, "module"], message: `module not found: ${module}`, atKey: false });
      }
      if (key === "supervisor") walk(child.children, [...here, "children"]);
    });
  };
  if (isRecord(raw) && isRecord(raw.supervisor)) walk(raw.supervisor.children, ["supervisor", "children"]);
}

/**
 * A mesh file asking for a runtime that is not there fails at load, saying how to get it: Deno
 * under a Bun supervisor, or Bun under a Deno one.
 */
function checkRuntimes(raw: unknown, found: Found[]): void {
  if (!isRecord(raw) || !isRecord(raw.mesh) || !isRecord(raw.supervisor)) return;
  const meshDefault = raw.mesh.runtime ?? THIS_RUNTIME;
  const asking: Record<"bun" | "deno", YamlPath[]> = { bun: [], deno: [] };
  const walk = (children: unknown, path: YamlPath) => {
    if (!Array.isArray(children)) return;
    children.forEach((child, i) => {
      if (!isRecord(child)) return;
      const runtime = child.runtime ?? meshDefault;
      if (typeof child.actor === "string" && (runtime === "bun" || runtime === "deno")) asking[runtime].push(child.runtime === undefined ? ["mesh", "runtime"] : [...path, i, "runtime"]);
      if (typeof child.supervisor === "string") walk(child.children, [...path, i, "children"]);
    });
  };
  walk(raw.supervisor.children, ["supervisor", "children"]);
  if (asking.deno.length > 0 && findDeno() === undefined) {
    found.push({ path: asking.deno[0]!, message: `no Deno binary found for this actor. ${DENO_INSTALL_HINT}`, atKey: false });
  }
  if (asking.bun.length > 0 && findBun() === undefined) {
    found.push({ path: asking.bun[0]!, message: `no Bun binary found for this actor. ${BUN_INSTALL_HINT}`, atKey: false });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
