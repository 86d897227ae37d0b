import type { z } from "zod";
import { isPlainMap, lazySchema, withZod, type Zod } from "./envelope.ts";
import { ErrorCode, HermesError } from "./errors.ts";
import { TopicIndex, validatePattern } from "./topics.ts";

/** Health of one actor instance, as the supervisor sees it. */
export type ActorHealth = "starting" | "healthy" | "unhealthy" | "down";

/**
 * One actor instance in the mesh registry. The supervisor owns the registry; every actor holds
 * a snapshot (kept current by updates on its control connection) and routes from it locally.
 */
export interface RegistryEntry {
  /** Actor name from the mesh file, e.g. "echo". Every instance of a pool shares it. */
  name: string;
  /** Index within the pool, from 0. */
  instance: number;
  /** Unique address of this instance: the name for a single instance, "name#i" in a pool. */
  address: string;
  /** Stable id (docs/protocol.md §8), same across restarts: stableAgentId(address, mesh name, hostname). */
  id: string;
  /** Unix socket path the instance listens on. */
  socket: string;
  capabilities: string[];
  /** Topic patterns (`*` one level, `#` zero or more levels). */
  subscriptions: string[];
  health: ActorHealth;
  pid?: number;
  restarts: number;
  /** Envelopes waiting in the mailbox, from the latest heartbeat. */
  queueDepth: number;
  /** Handlers running, from the latest heartbeat. */
  inFlight: number;
  /** ms since epoch of the last change. */
  updatedAt: number;
  /** An actor of the supervisor tree, or a program that joined from outside (connectMesh, the gateway). */
  kind?: "actor" | "client";
  /**
   * The host whose supervisor owns the entry, in a mesh across hosts (docs/nats.md); absent on a
   * mesh of one host. Entries of other hosts reach this one through NATS, not its control plane.
   */
  host?: string;
  /**
   * An actor started outside the supervisor tree (`hermes-mesh actor`, another container, another
   * language): it registers with the mesh token, the supervisor never signals it, and when it
   * goes its entry stays, down, until it registers again.
   */
  external?: boolean;
  /**
   * What the instance said of itself at `register`: true when its dedupe memory outlives a restart
   * (a durable actor), false when a restart forgets what it handled. Absent: not said. A sender
   * moves what a crash left unacknowledged to a healthy sibling only when this is false
   * (docs/protocol.md §4, "When an instance crashes"): a durable instance would have deduplicated it.
   */
  durable?: boolean;
  /**
   * What the actor's module says about its capabilities (`defineActor({ capabilityInfo })`):
   * a description and the JSON Schema of a request's payload, per capability. The gateway
   * publishes them as A2A skills and MCP tools (docs/interop.md). Bounded at registration.
   */
  capabilityInfo?: Record<string, CapabilityInfo>;
}

/**
 * A capability described for callers that are not in the mesh (A2A skills, MCP tools).
 *
 * @example
 * const info: CapabilityInfo = { description: "Evaluates arithmetic", inputSchema: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] } };
 */
export interface CapabilityInfo {
  description?: string;
  /** JSON Schema (an object schema) of the request payload. */
  inputSchema?: Record<string, unknown>;
}

/** Bounds of what one member may declare: the registry goes to every member on every change. */
export const CAPABILITY_INFO_LIMITS = { descriptionChars: 2000, schemaBytes: 32 * 1024, schemaDepth: 32 } as const;

/**
 * Checks what a member declares about its capabilities (the `capability_info` of `register`),
 * keeping only capabilities it serves. Throws HermesError code 2 naming the capability and the
 * reason when a description or schema is not a string or a JSON object, or over the limits.
 *
 * @example
 * parseCapabilityInfo({ calculator: { description: "2+2" } }, ["calculator"]); // { calculator: { description: "2+2" } }
 */
export function parseCapabilityInfo(value: unknown, capabilities: readonly string[]): Record<string, CapabilityInfo> | undefined {
  if (value === undefined || value === null) return undefined;
  const refuse = (path: string, why: string): never => {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `capability_info${path}: ${why}`, { reason: why, path: `capability_info${path}`, expected: "{ <capability>: { description?: string, inputSchema?: JSON Schema object } }" });
  };
  if (!isPlainMap(value)) refuse("", "not a map");
  const info: Record<string, CapabilityInfo> = {};
  for (const [capability, declared] of Object.entries(value as Record<string, unknown>)) {
    const path = `.${capability}`;
    if (!capabilities.includes(capability)) refuse(path, `'${capability}' is not one of the capabilities it serves (${capabilities.join(", ") || "none"})`);
    if (!isPlainMap(declared)) refuse(path, "not a map");
    const { description, inputSchema, ...rest } = declared as Record<string, unknown>;
    if (Object.keys(rest).length > 0) refuse(path, `unknown field '${Object.keys(rest)[0]}'`);
    const one: CapabilityInfo = {};
    if (description !== undefined) {
      if (typeof description !== "string") refuse(`${path}.description`, "not a string");
      if ((description as string).length > CAPABILITY_INFO_LIMITS.descriptionChars) refuse(`${path}.description`, `over ${CAPABILITY_INFO_LIMITS.descriptionChars} characters`);
      one.description = description as string;
    }
    if (inputSchema !== undefined) {
      if (!isPlainMap(inputSchema)) refuse(`${path}.inputSchema`, "not a JSON Schema object");
      if (depthOf(inputSchema, CAPABILITY_INFO_LIMITS.schemaDepth + 1) > CAPABILITY_INFO_LIMITS.schemaDepth) refuse(`${path}.inputSchema`, `nested deeper than ${CAPABILITY_INFO_LIMITS.schemaDepth}`);
      let text: string;
      try {
        text = JSON.stringify(inputSchema);
      } catch {
        return refuse(`${path}.inputSchema`, "not JSON");
      }
      if (text.length > CAPABILITY_INFO_LIMITS.schemaBytes) refuse(`${path}.inputSchema`, `over ${CAPABILITY_INFO_LIMITS.schemaBytes} bytes as JSON`);
      // A copy through JSON: only JSON values stay (no binary, no ext types, no undefined).
      one.inputSchema = JSON.parse(text);
    }
    info[capability] = one;
  }
  return Object.keys(info).length > 0 ? info : undefined;
}

/** Nesting depth of a JSON-like value, counting stops past `stop`. */
function depthOf(v: unknown, stop: number, depth = 0): number {
  if (depth >= stop || typeof v !== "object" || v === null) return depth;
  let deepest = depth + 1;
  for (const child of Object.values(v)) deepest = Math.max(deepest, depthOf(child, stop, depth + 1));
  return deepest;
}

const entrySchema = (z: Zod) =>
  z.object({
    name: z.string().min(1),
    instance: z.int().min(0),
    address: z.string().min(1),
    id: z.string().min(1),
    socket: z.string(),
    capabilities: z.array(z.string()),
    subscriptions: z.array(z.string()),
    health: z.enum(["starting", "healthy", "unhealthy", "down"]),
    pid: z.int().optional(),
    restarts: z.int().min(0),
    queueDepth: z.int().min(0),
    inFlight: z.int().min(0),
    updatedAt: z.number(),
    kind: z.enum(["actor", "client"]).optional(),
    host: z.string().min(1).optional(),
    external: z.boolean().optional(),
    durable: z.boolean().optional(),
    capabilityInfo: z.record(z.string(), z.object({ description: z.string().optional(), inputSchema: z.record(z.string(), z.unknown()).optional() })).optional(),
  }) satisfies z.ZodType<RegistryEntry>;

/** What a patch may change: anything but the address, which is the key. */
export type RegistryPatch = Partial<Omit<RegistryEntry, "address">>;

const registryUpdateSchema = withZod((z) => {
  const entry = entrySchema(z);
  return z.discriminatedUnion("type", [
    z.object({ type: z.literal("snapshot"), entries: z.array(entry) }),
    z.object({ type: z.literal("upsert"), entry }),
    z.object({ type: z.literal("patch"), address: z.string(), changes: entry.omit({ address: true }).partial() }),
    z.object({ type: z.literal("remove"), address: z.string() }),
  ]);
});

/**
 * One change to the registry. Plain JSON-able objects: the supervisor sends them to every actor
 * as event payloads, and each actor applies them to its own copy. The schema is the reference;
 * it is built, and zod loaded, on first use: members check updates with
 * {@link parseRegistryUpdate}'s hand-written rules and ask zod only to explain a refusal.
 *
 * @example
 * RegistryUpdateSchema.safeParse({ type: "remove", address: "echo#1" }).success; // true
 */
export const RegistryUpdateSchema = lazySchema(registryUpdateSchema);
export type RegistryUpdate = z.infer<typeof RegistryUpdateSchema>;

/**
 * Checks an update that arrived from the wire; throws HermesError code 2 when it is malformed.
 * An update as the supervisor sends it (no fields beyond the schema's) passes a hand-written
 * check and comes back as it is; anything else goes to the schema, which strips unknown fields
 * or says which are wrong.
 *
 * @example
 * registry.applyUpdate(parseRegistryUpdate(envelope.payload));
 */
export function parseRegistryUpdate(value: unknown): RegistryUpdate {
  if (isExactUpdate(value)) return value;
  const result = registryUpdateSchema().safeParse(value);
  if (result.success) return result.data;
  const reason = result.error.issues.map((i) => `${i.path.join(".") || "update"}: ${i.message}`).join("; ");
  throw new HermesError(ErrorCode.INVALID_REQUEST, `malformed registry update: ${reason}`, { reason });
}

/*
 * The hand-written check: true when the schema would accept `value` and hand back an equal
 * object, that is when it is valid and has no field the schema does not name (z.object strips
 * those). Anything else is the schema's to judge. test/mesh/schema-checks.test.ts runs both over
 * valid and broken updates and requires them to agree.
 */
type FieldCheck = (v: any) => boolean;
const HEALTH: ReadonlySet<unknown> = new Set(["starting", "healthy", "unhealthy", "down"]);
const KINDS: ReadonlySet<unknown> = new Set(["actor", "client"]);
const isString: FieldCheck = (v) => typeof v === "string";
const nonEmpty: FieldCheck = (v) => typeof v === "string" && v.length > 0;
const count: FieldCheck = (v) => Number.isSafeInteger(v) && v >= 0;
const strings: FieldCheck = (v) => {
  if (!Array.isArray(v)) return false;
  // By index, as zod reads an array: a hole is undefined, not skipped as by every().
  for (let i = 0; i < v.length; i++) if (typeof v[i] !== "string") return false;
  return true;
};
/** Every field of an entry with its rule; the optional ones may be missing or undefined. */
const ENTRY_FIELDS = new Map<string, { check: FieldCheck; optional?: true }>([
  ["name", { check: nonEmpty }],
  ["instance", { check: count }],
  ["address", { check: nonEmpty }],
  ["id", { check: nonEmpty }],
  ["socket", { check: isString }],
  ["capabilities", { check: strings }],
  ["subscriptions", { check: strings }],
  ["health", { check: (v) => HEALTH.has(v) }],
  ["pid", { check: Number.isSafeInteger, optional: true }],
  ["restarts", { check: count }],
  ["queueDepth", { check: count }],
  ["inFlight", { check: count }],
  ["updatedAt", { check: Number.isFinite }],
  ["kind", { check: (v) => KINDS.has(v), optional: true }],
  ["host", { check: nonEmpty, optional: true }],
  ["external", { check: (v) => typeof v === "boolean", optional: true }],
  ["durable", { check: (v) => typeof v === "boolean", optional: true }],
  ["capabilityInfo", { check: isCapabilityInfoMap, optional: true }],
]);
const REQUIRED_FIELDS = [...ENTRY_FIELDS.values()].filter((field) => !field.optional).length;

/** What zod would accept and give back unchanged as `capabilityInfo`. */
function isCapabilityInfoMap(v: unknown): boolean {
  if (!isPlainMap(v)) return false;
  for (const info of Object.values(v)) {
    if (!isPlainMap(info)) return false;
    for (const key of Object.keys(info)) {
      const value = info[key];
      if (key === "description" ? value !== undefined && typeof value !== "string" : key === "inputSchema" ? value !== undefined && !isPlainMap(value) : true) return false;
    }
  }
  return true;
}

/** A plain map with exactly these own keys. */
function hasExactly(v: unknown, keys: readonly string[]): v is Record<string, any> {
  if (typeof v !== "object" || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return false;
  const own = Object.keys(v);
  return own.length === keys.length && keys.every((key) => own.includes(key));
}

/** An entry (`patch`: the changes of a patch, every field optional and no address). */
function isExactEntry(v: unknown, patch = false): boolean {
  if (typeof v !== "object" || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return false;
  let required = 0;
  for (const key of Object.keys(v)) {
    const field = ENTRY_FIELDS.get(key);
    if (field === undefined || (patch && key === "address")) return false;
    const value = (v as Record<string, unknown>)[key];
    if (field.optional || patch) {
      if (value !== undefined && !field.check(value)) return false;
    } else {
      if (!field.check(value)) return false;
      required++;
    }
  }
  return patch || required === REQUIRED_FIELDS;
}

function isExactUpdate(v: unknown): v is RegistryUpdate {
  if (typeof v !== "object" || v === null) return false;
  switch ((v as { type?: unknown }).type) {
    case "snapshot": {
      if (!hasExactly(v, ["type", "entries"]) || !Array.isArray(v.entries)) return false;
      for (let i = 0; i < v.entries.length; i++) if (!isExactEntry(v.entries[i])) return false;
      return true;
    }
    case "upsert":
      return hasExactly(v, ["type", "entry"]) && isExactEntry(v.entry);
    case "patch":
      return hasExactly(v, ["type", "address", "changes"]) && typeof v.address === "string" && isExactEntry(v.changes, true);
    case "remove":
      return hasExactly(v, ["type", "address"]) && typeof v.address === "string";
    default:
      return false;
  }
}

/** The instances of one actor whose subscriptions match a topic: a pool gets one delivery, to one of them. */
export interface SubscriberGroup {
  name: string;
  /** In instance order. */
  instances: RegistryEntry[];
}

/** Fields whose change moves an entry between indexes (everything else is load and health). */
const INDEXED = ["name", "instance", "id", "capabilities", "subscriptions"] as const;

/** How many answers of each registry lookup are kept between updates. */
const KEPT_ANSWERS = 1024;

/**
 * The mesh registry: every actor instance by address, with indexes for routing by name, stable
 * id, capability and topic. The supervisor owns the original; actors keep a copy current by
 * applying the updates it sends. Entries handed out are the stored objects: treat them as
 * read-only and change them through `patch`.
 *
 * @example
 * const registry = new Registry();
 * registry.onUpdate((update) => broadcast(update));
 * registry.upsert(entry);
 * registry.patch("echo#1", { health: "healthy" });
 * registry.subscribersOf("demo.hello"); // [{ name: "echo", instances: [echo#0, echo#1] }]
 */
export class Registry {
  #byAddress = new Map<string, RegistryEntry>();
  /** name → addresses in instance order. Indexes hold addresses so load patches touch one map. */
  #byName = new Map<string, string[]>();
  #byId = new Map<string, string>();
  #byCapability = new Map<string, Set<string>>();
  #topics = new TopicIndex<string>();
  #listeners = new Set<(update: RegistryUpdate) => void>();
  /** resolveTarget's and withCapability's answers since the last update, KEPT_ANSWERS each at most (names a request asks for are not trusted). */
  #resolved = new Map<string, readonly RegistryEntry[]>();
  #capable = new Map<string, readonly RegistryEntry[]>();

  /** Adds or replaces the entry with `entry.address`. */
  upsert(entry: RegistryEntry): void {
    this.applyUpdate({ type: "upsert", entry });
  }

  /** Changes some fields of an entry; false (and no notification) when the address is unknown. */
  patch(address: string, changes: RegistryPatch): boolean {
    return this.applyUpdate({ type: "patch", address, changes });
  }

  /** Removes an entry; false when the address is unknown. */
  remove(address: string): boolean {
    return this.applyUpdate({ type: "remove", address });
  }

  /** Every entry, in insertion order. */
  snapshot(): RegistryEntry[] {
    return [...this.#byAddress.values()];
  }

  /**
   * Applies one update and notifies the listeners with it. Returns false (notifying nobody)
   * for a patch or remove of an unknown address. Throws HermesError code 2, changing nothing,
   * when an entry carries an invalid subscription pattern.
   */
  applyUpdate(update: RegistryUpdate): boolean {
    this.#resolved.clear();
    this.#capable.clear();
    switch (update.type) {
      case "snapshot": {
        const entries = update.entries.map(copy);
        entries.forEach(checkPatterns);
        for (const entry of [...this.#byAddress.values()]) this.#delete(entry);
        for (const entry of entries) this.#put(entry);
        break;
      }
      case "upsert": {
        const entry = copy(update.entry);
        checkPatterns(entry);
        this.#put(entry);
        break;
      }
      case "patch": {
        const old = this.#byAddress.get(update.address);
        if (!old) return false;
        const entry = copy({ ...old, ...update.changes, address: old.address });
        checkPatterns(entry);
        if (INDEXED.some((key) => key in update.changes)) {
          this.#delete(old);
          this.#insert(entry);
        } else {
          this.#byAddress.set(entry.address, entry);
        }
        break;
      }
      case "remove": {
        const old = this.#byAddress.get(update.address);
        if (!old) return false;
        this.#delete(old);
        break;
      }
    }
    this.#notify(update);
    return true;
  }

  /**
   * Calls `listener` with every update applied from now on; returns the function that stops it.
   *
   * @example
   * const stop = registry.onUpdate((u) => connection.send(createEvent("mesh.registry", u)));
   */
  onUpdate(listener: (update: RegistryUpdate) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  byAddress(address: string): RegistryEntry | undefined {
    return this.#byAddress.get(address);
  }

  /** All instances of an actor name, in instance order. */
  byName(name: string): RegistryEntry[] {
    return this.#entries(this.#byName.get(name) ?? []);
  }

  byId(stableId: string): RegistryEntry | undefined {
    const address = this.#byId.get(stableId);
    return address === undefined ? undefined : this.#byAddress.get(address);
  }

  /**
   * The candidates for a `target_agent`: every instance for an actor name, the one instance for
   * a "name#i" address or a stable id, or none.
   *
   * @example
   * registry.resolveTarget("echo");   // [echo#0, echo#1]
   * registry.resolveTarget("echo#1"); // [echo#1]
   */
  resolveTarget(target: string): readonly RegistryEntry[] {
    // Every send resolves its target: the answer is kept until the registry next changes.
    const found = this.#resolved.get(target);
    if (found) return found;
    const pool = this.#byName.get(target);
    const entry = pool ? undefined : (this.#byAddress.get(target) ?? this.byId(target));
    return this.#keep(this.#resolved, target, pool ? this.#entries(pool) : entry ? [entry] : []);
  }

  /** Every instance declaring `capability`, whatever its health (the scheduler filters); kept, as resolveTarget's, until the registry next changes. */
  withCapability(capability: string): readonly RegistryEntry[] {
    return this.#capable.get(capability) ?? this.#keep(this.#capable, capability, this.#entries(this.#byCapability.get(capability) ?? []));
  }

  /** A lookup's answer, frozen (every caller shares it) and kept in `cache` while it has room. */
  #keep(cache: Map<string, readonly RegistryEntry[]>, key: string, entries: RegistryEntry[]): readonly RegistryEntry[] {
    const kept = Object.freeze(entries);
    if (cache.size < KEPT_ANSWERS) cache.set(key, kept);
    return kept;
  }

  /**
   * The actors subscribed to `topic`, one group per actor name (sorted by name), each listing
   * the instances whose patterns match: deliver once per group, to an instance you pick.
   */
  subscribersOf(topic: string): SubscriberGroup[] {
    const groups = new Map<string, RegistryEntry[]>();
    for (const entry of this.#entries(this.#topics.match(topic))) {
      const group = groups.get(entry.name);
      if (group) group.push(entry);
      else groups.set(entry.name, [entry]);
    }
    return [...groups]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, instances]) => ({ name, instances: instances.sort((a, b) => a.instance - b.instance) }));
  }

  /**
   * What a route of `kind` can reach, sorted, for the `known` field of an UNROUTABLE (code 8)
   * error: actor names (the default), capabilities, or topic patterns subscribed to. Clients
   * are never listed: nothing routes to them by name.
   *
   * @example
   * registry.known("capability"); // ["calculator", "echo"]
   */
  known(kind: "name" | "capability" | "topic" = "name"): string[] {
    const actors = [...this.#byAddress.values()].filter((e) => e.kind !== "client");
    const values = kind === "name" ? actors.map((e) => e.name) : actors.flatMap((e) => (kind === "capability" ? e.capabilities : e.subscriptions));
    return [...new Set(values)].sort();
  }

  #entries(addresses: Iterable<string>): RegistryEntry[] {
    const out: RegistryEntry[] = [];
    for (const address of addresses) {
      const entry = this.#byAddress.get(address);
      if (entry) out.push(entry);
    }
    return out;
  }

  /** Inserts, replacing any entry at the same address. */
  #put(entry: RegistryEntry): void {
    const old = this.#byAddress.get(entry.address);
    if (old) this.#delete(old);
    this.#insert(entry);
  }

  #insert(entry: RegistryEntry): void {
    const { address } = entry;
    this.#byAddress.set(address, entry);
    const pool = this.#byName.get(entry.name) ?? [];
    pool.push(address);
    pool.sort((a, b) => this.#byAddress.get(a)!.instance - this.#byAddress.get(b)!.instance);
    this.#byName.set(entry.name, pool);
    this.#byId.set(entry.id, address);
    for (const capability of entry.capabilities) {
      const set = this.#byCapability.get(capability) ?? new Set();
      this.#byCapability.set(capability, set.add(address));
    }
    for (const pattern of entry.subscriptions) this.#topics.add(pattern, address);
  }

  #delete(entry: RegistryEntry): void {
    const { address } = entry;
    this.#byAddress.delete(address);
    const pool = this.#byName.get(entry.name)?.filter((a) => a !== address) ?? [];
    if (pool.length > 0) this.#byName.set(entry.name, pool);
    else this.#byName.delete(entry.name);
    if (this.#byId.get(entry.id) === address) this.#byId.delete(entry.id);
    for (const capability of entry.capabilities) {
      const set = this.#byCapability.get(capability);
      set?.delete(address);
      if (set?.size === 0) this.#byCapability.delete(capability);
    }
    for (const pattern of entry.subscriptions) this.#topics.remove(pattern, address);
  }

  #notify(update: RegistryUpdate): void {
    // Every listener hears every update even if an earlier one throws; the first error is rethrown.
    let failure: { error: unknown } | undefined;
    for (const listener of [...this.#listeners]) {
      try {
        listener(update);
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}

/** Stored entries are private copies, so a caller mutating its object cannot desync the indexes. */
function copy(entry: RegistryEntry): RegistryEntry {
  return { ...entry, capabilities: [...entry.capabilities], subscriptions: [...entry.subscriptions] };
}

function checkPatterns(entry: RegistryEntry): void {
  for (const pattern of entry.subscriptions) validatePattern(pattern);
}
