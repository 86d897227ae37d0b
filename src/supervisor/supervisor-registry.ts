/**
 * The supervisor's registry: the original the whole mesh routes from, and what its control
 * server tells every member. Every update it announces wakes every member of the mesh, so a
 * start of the n-th actor costs n wake-ups per update (bench/restart.bench.ts, docs/benchmarks.md):
 * it announces an instance that is starting once, when its health changes, with everything it
 * got meanwhile (pid, registration), and it announces nothing for a patch that changes nothing.
 * Its own state is always current; only the announcements are held.
 */
import { Registry, type RegistryEntry, type RegistryPatch, type RegistryUpdate } from "../../mesh/registry.ts";

/**
 * @example
 * const registry = new SupervisorRegistry();
 * registry.onUpdate((u) => broadcast(u));
 * registry.patch("echo#0", { pid: 1234 });              // "starting": held
 * registry.patch("echo#0", { capabilities: ["echo"] });  // held
 * registry.patch("echo#0", { health: "healthy" });       // one update: pid, capabilities and health
 */
export class SupervisorRegistry extends Registry {
  #listeners = new Set<(update: RegistryUpdate) => void>();
  /** What each starting instance got that is not announced yet. */
  #held = new Map<string, RegistryPatch>();
  #holdNext = false;
  #seen: ((update: RegistryUpdate) => void) | undefined;

  /** `seen`: called with every update asked for (one changing nothing too), before any announcement. */
  constructor(seen?: (update: RegistryUpdate) => void) {
    super();
    this.#seen = seen;
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
      this.#holdNext = entry?.health === "starting" && (update.changes.health === undefined || update.changes.health === "starting");
    } else {
      this.#holdNext = false;
    }
    return super.applyUpdate(update);
  }

  #announce(update: RegistryUpdate): void {
    const hold = this.#holdNext;
    this.#holdNext = false;
    this.#seen?.(update);
    if (update.type === "patch") {
      const held = this.#held.get(update.address);
      if (hold) {
        this.#held.set(update.address, { ...held, ...update.changes });
        return;
      }
      if (held) {
        this.#held.delete(update.address);
        update = { ...update, changes: { ...held, ...update.changes } };
      }
    } else if (update.type === "upsert" || update.type === "remove") {
      // Either carries the whole story of that address.
      this.#held.delete(update.type === "upsert" ? update.entry.address : update.address);
    } else {
      this.#held.clear();
    }
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
