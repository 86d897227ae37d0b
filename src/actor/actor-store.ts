/**
 * An actor's key-value state that handlers read and write through `ctx.store`. In a durable
 * actor the writes of one handler call are committed together with its dedupe record, its
 * answer and the messages it sent, in one SQLite transaction (on a full disk none of them
 * is, and a request is answered with code 6); elsewhere they live in memory.
 *
 * @example
 * onRequest(request, ctx) {
 *   ctx.store.set("count", (ctx.store.get<number>("count") ?? 0) + 1);
 *   return { count: ctx.store.get<number>("count") };
 * }
 */
export interface ActorStore {
  get<T = unknown>(key: string): T | undefined;
  set(key: string, value: unknown): void;
  delete(key: string): void;
  /** Keys starting with `prefix` (all keys without one), sorted. */
  keys(prefix?: string): string[];
}

/** A store in memory: what a non-durable actor gets. */
export function memoryStore(): ActorStore {
  const map = new Map<string, unknown>();
  return {
    get: <T>(key: string) => map.get(key) as T | undefined,
    set: (key, value) => void map.set(key, value),
    delete: (key) => void map.delete(key),
    keys: (prefix = "") => [...map.keys()].filter((k) => k.startsWith(prefix)).sort(),
  };
}

/** Deleted keys in a staged write set. */
export const DELETED = Symbol("deleted");

/**
 * One handler call's view of a durable store: reads see the call's own writes first; the
 * writes wait in `writes` until the call's transaction commits.
 */
export function stagedStore(base: ActorStore, writes: Map<string, unknown>): ActorStore {
  return {
    get: <T>(key: string) => {
      if (writes.has(key)) {
        const value = writes.get(key);
        return (value === DELETED ? undefined : value) as T | undefined;
      }
      return base.get<T>(key);
    },
    set: (key, value) => void writes.set(key, value),
    delete: (key) => void writes.set(key, DELETED),
    keys: (prefix = "") => {
      const keys = new Set(base.keys(prefix));
      for (const [key, value] of writes) {
        if (!key.startsWith(prefix)) continue;
        if (value === DELETED) keys.delete(key);
        else keys.add(key);
      }
      return [...keys].sort();
    },
  };
}
