/**
 * The supervisor's registry: the original the whole mesh routes from, and what its control
 * server tells every member. Every update it announces wakes every member of the mesh, so a
 * start of the n-th actor costs n wake-ups per update (bench/restart.bench.ts, docs/benchmarks.md):
 * it announces an instance that is starting once, when its health changes, with everything it
 * got meanwhile (pid, registration), and it announces nothing for a patch that changes nothing.
 *
 * The restart of a lone instance is held the same way, from its "down" for up to
 * `restartHoldMs`: back in time, it is announced once, healthy with its new pid. Lone: an
 * instance this supervisor restarts (`restartsOf`), not in a pool, and sharing none of its
 * capabilities with another actor, so that no router would choose among it and a sibling by
 * health (mesh/routing.ts picks a lone candidate whatever its health). A sender's link to it saw
 * the crash itself and redials on its "healthy". What the "down" did was wake every member on
 * the restart's critical path: on one core they took the CPU the restart needed (its module
 * import and registration 10 to 13 ms slower, docs/benchmarks.md). A down that no restart
 * follows goes out when the supervisor says so (`noRestart`) or when the hold ends.
 *
 * Its own state is always current; only the announcements are held.
 */
import { Registry, type RegistryEntry, type RegistryPatch, type RegistryUpdate } from "../../mesh/registry.ts";

/** How long the "down" of a lone instance waits for its restart before it is announced anyway. */
export const RESTART_HOLD_MS = 250;

/**
 * @example
 * const registry = new SupervisorRegistry();
 * registry.onUpdate((u) => broadcast(u));
 * registry.patch("echo#0", { pid: 1234 });              // "starting": held
 * registry.patch("echo#0", { capabilities: ["echo"] });  // held
 * registry.patch("echo#0", { health: "healthy" });       // one update: pid, capabilities and health
 * registry.restartsOf("solo");
 * registry.patch("solo", { health: "down" });           // a lone instance: held for its restart
 */
export class SupervisorRegistry extends Registry {
  #listeners = new Set<(update: RegistryUpdate) => void>();
  /** What each starting (or restarting) instance got that is not announced yet. */
  #held = new Map<string, RegistryPatch>();
  /** Lone instances held since they went down, each until its hold ends. */
  #restarts = new Map<string, ReturnType<typeof setTimeout>>();
  /** Instances whose supervisor restarts them (restartsOf). */
  #supervised = new Set<string>();
  #holdNext: "no" | "hold" | "restart" = "no";
  #seen: ((update: RegistryUpdate) => void) | undefined;
  readonly #restartHoldMs: number;

  /**
   * `seen`: called with every update asked for (one changing nothing too), before any
   * announcement; `restartHoldMs`: how long a lone instance's "down" waits for its restart
   * (0: announced at once).
   */
  constructor(seen?: (update: RegistryUpdate) => void, options: { restartHoldMs?: number } = {}) {
    super();
    this.#seen = seen;
    this.#restartHoldMs = options.restartHoldMs ?? RESTART_HOLD_MS;
    super.onUpdate((update) => this.#announce(update));
  }

  /** Calls `listener` with every announced update: see the file's comment for what is held. */
  override onUpdate(listener: (update: RegistryUpdate) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  override applyUpdate(update: RegistryUpdate): boolean {
    if (update.type === "patch") {
      const entry = this.byAddress(update.address);
      if (entry && changesNothing(entry, update.changes)) {
        this.#seen?.(update);
        return true;
      }
      this.#holdNext = this.#holdFor(entry, update.changes);
    } else {
      this.#holdNext = "no";
    }
    return super.applyUpdate(update);
  }

  /** `address` is an instance this supervisor restarts when it crashes: its down may be held (see above). */
  restartsOf(address: string): void {
    this.#supervised.add(address);
  }

  /** No restart follows the down of `address` (stopped, or exited for good): what is held goes out now. */
  noRestart(address: string): void {
    if (this.#restarts.has(address)) this.#endRestartHold(address);
  }

  /** Whether a patch of `entry` is held: while it starts, or while a lone instance restarts ("restart": its hold begins). */
  #holdFor(entry: RegistryEntry | undefined, changes: RegistryPatch): "no" | "hold" | "restart" {
    if (!entry) return "no";
    const health = changes.health;
    if (this.#restarts.has(entry.address)) return health === "healthy" ? "no" : "hold";
    if (entry.health === "starting") return health === undefined || health === "starting" ? "hold" : "no";
    if (health !== "down" || entry.health === "down" || this.#restartHoldMs <= 0 || !this.#supervised.has(entry.address)) return "no";
    return this.#lone(entry) ? "restart" : "no";
  }

  /** Not in a pool, and no other actor offers any of its capabilities. */
  #lone(entry: RegistryEntry): boolean {
    return this.byName(entry.name).length === 1 && entry.capabilities.every((capability) => this.withCapability(capability).length === 1);
  }

  #announce(update: RegistryUpdate): void {
    const hold = this.#holdNext;
    this.#holdNext = "no";
    this.#seen?.(update);
    if (update.type === "patch") {
      const address = update.address;
      const held = this.#held.get(address);
      if (hold !== "no") {
        this.#held.set(address, { ...held, ...update.changes });
        if (hold === "restart") {
          const timer = setTimeout(() => this.#endRestartHold(address), this.#restartHoldMs);
          (timer as { unref?: () => void }).unref?.();
          this.#restarts.set(address, timer);
        }
        return;
      }
      this.#forgetRestart(address);
      if (held) {
        this.#held.delete(address);
        update = { ...update, changes: { ...held, ...update.changes } };
      }
    } else if (update.type === "upsert" || update.type === "remove") {
      // Either carries the whole story of that address.
      const address = update.type === "upsert" ? update.entry.address : update.address;
      this.#held.delete(address);
      this.#forgetRestart(address);
      if (update.type === "remove") this.#supervised.delete(address);
    } else {
      this.#held.clear();
      for (const timer of this.#restarts.values()) clearTimeout(timer);
      this.#restarts.clear();
    }
    this.#tell(update);
  }

  /** A lone instance was not back in time (or will not be): what it went through is announced as it stands. */
  #endRestartHold(address: string): void {
    this.#forgetRestart(address);
    const held = this.#held.get(address);
    if (!held) return;
    this.#held.delete(address);
    // Still starting: what comes next until its health changes is held as for any start.
    this.#tell({ type: "patch", address, changes: held });
  }

  #forgetRestart(address: string): void {
    const timer = this.#restarts.get(address);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.#restarts.delete(address);
  }

  #tell(update: RegistryUpdate): void {
    for (const listener of [...this.#listeners]) listener(update);
  }
}

/** True when `changes` leaves `entry` as it is, its `updatedAt` aside. */
function changesNothing(entry: RegistryEntry, changes: RegistryPatch): boolean {
  return Object.entries(changes).every(([key, value]) =>
    key === "updatedAt" || sameValue(entry[key as keyof RegistryEntry], value));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => x === b[i]);
  return a === b;
}
