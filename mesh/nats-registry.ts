/**
 * One mesh across hosts (docs/nats.md): every host runs its own supervisor for its own actors,
 * and the supervisors of one mesh share their registries through a JetStream key-value bucket
 * (so does a connectMesh client that joins through NATS alone, its own entry its only one).
 * Each supervisor writes the entries it owns (its actors, the clients joined on its control
 * socket) and mirrors everyone else's into its own registry, from where its members learn them
 * as they learn local ones (the control plane's registry updates). Routing by name, capability
 * and topic then works across hosts unchanged, and `ps` shows every member with its host.
 *
 * A host that dies cannot delete its entries: each supervisor re-writes its own every
 * REFRESH_MS, and an entry not refreshed for STALE_MS is marked down here (JetStream 2.9 sends
 * watchers nothing when a key ages out, so the staleness is judged by the readers).
 */
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "./logger.ts";
import type { Registry, RegistryEntry, RegistryUpdate } from "./registry.ts";

const REFRESH_MS = 5_000;
const STALE_MS = 3 * REFRESH_MS + 1_000;

/** What the bridge needs: a connection, the mesh, this host's name, the registry it shares. */
export interface NatsRegistryOptions {
  connection: NatsConnection;
  mesh: string;
  host: string;
  registry: Registry;
  /** Replicas of the bucket (3 in a cluster). */
  replicas?: number;
  log: Logger;
}

/** The bridge while it runs. */
export interface NatsRegistry {
  /** Resolves once the entries already in the bucket are in the registry. */
  readonly initialized: Promise<void>;
  close(): Promise<void>;
}

/** The bucket of a mesh: KV bucket names allow [A-Za-z0-9_-]. */
export function registryBucket(mesh: string): string {
  return `hermes_registry_${mesh.replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

/** A KV key for an address: keys allow [-/_=.A-Za-z0-9], so anything else is hex-escaped (`#` is `=23`). */
export function registryKey(address: string): string {
  return `member.${address.replace(/[^A-Za-z0-9_-]/g, (c) => `=${c.charCodeAt(0).toString(16).padStart(2, "0")}`)}`;
}

/**
 * Starts sharing `registry` on the mesh's bucket: its own entries go out now and on every
 * change, the other hosts' come in (those already there first).
 *
 * @example
 * const shared = await startNatsRegistry({ connection, mesh: "shop", host: "edge-1", registry, log });
 * ...; await shared.close();
 */
export async function startNatsRegistry(options: NatsRegistryOptions): Promise<NatsRegistry> {
  const { registry, host, log } = options;
  const bucket = () => new Kvm(options.connection).create(registryBucket(options.mesh), { history: 1, replicas: options.replicas ?? 1 });
  const kv: KV = await bucket();
  // A server back without its store lost the bucket: the next refresh makes it again and rewrites
  // this host's entries (the watch, an ordered consumer, finds it by itself).
  let remaking: Promise<unknown> | undefined;
  const remake = () => void (remaking ??= bucket().catch(() => {}).finally(() => (remaking = undefined)));
  /** Remote addresses and when their entry was last written. */
  const remote = new Map<string, number>();
  const own = (entry: RegistryEntry) => entry.host === undefined || entry.host === host;
  const write = (entry: RegistryEntry) => {
    kv.put(registryKey(entry.address), JSON.stringify({ ...entry, host, written_at: Date.now() })).catch((error) => {
      log.warn("registry entry not shared", { address: entry.address, error: String(error) });
      remake();
    });
  };
  const publish = (update: RegistryUpdate) => {
    switch (update.type) {
      case "snapshot":
        for (const entry of update.entries) if (own(entry)) write(entry);
        return;
      case "upsert":
        if (own(update.entry)) write(update.entry);
        return;
      case "patch": {
        const entry = registry.byAddress(update.address);
        if (entry && own(entry)) write(entry);
        return;
      }
      case "remove":
        if (!remote.has(update.address)) kv.delete(registryKey(update.address)).catch(() => {});
        return;
    }
  };
  const unpublish = registry.onUpdate(publish);
  for (const entry of registry.snapshot()) if (own(entry)) write(entry);
  const watch = await kv.watch({ key: "member.>" });
  const initialized = Promise.withResolvers<void>();
  if ((await kv.status()).values === 0) initialized.resolve();
  void (async () => {
    for await (const change of watch) {
      if (change.delta === 0) initialized.resolve();
      if (change.operation !== "PUT") {
        const address = [...remote.keys()].find((a) => registryKey(a) === change.key);
        if (address) {
          registry.remove(address); // while still listed as remote, so that it is not deleted again
          remote.delete(address);
        }
        continue;
      }
      let entry: RegistryEntry & { written_at?: number };
      try {
        entry = change.json();
      } catch {
        continue;
      }
      if (entry.host === host) continue;
      const local = registry.byAddress(entry.address);
      if (local && own(local)) {
        log.warn("another host claims an address this host owns: ignored", { address: entry.address, host: entry.host });
        continue;
      }
      const { written_at: writtenAt, ...fields } = entry;
      remote.set(entry.address, writtenAt ?? Date.now());
      registry.upsert(fields);
    }
  })().catch((error) => log.warn("registry watch ended", { error: String(error) }));
  const refresh = setInterval(() => {
    for (const entry of registry.snapshot()) if (own(entry)) write(entry);
    const now = Date.now();
    for (const [address, writtenAt] of remote) {
      const entry = registry.byAddress(address);
      if (entry && entry.health !== "down" && now - writtenAt > STALE_MS) {
        log.warn("a remote member's host stopped refreshing it: marked down", { address, host: entry.host });
        registry.patch(address, { health: "down", updatedAt: now });
      }
    }
  }, REFRESH_MS);
  return {
    initialized: initialized.promise,
    async close() {
      clearInterval(refresh);
      unpublish();
      watch.stop();
      // This host's members leave the mesh with it.
      await Promise.all(registry.snapshot().filter(own).map((entry) => kv.delete(registryKey(entry.address)).catch(() => {})));
    },
  };
}
