/**
 * The actor path as a program uses it: a `connectMesh` client in this process and a sink actor
 * (bench/actors/sink.ts) in its own process, under a real supervisor. Two stream contenders:
 * - events: 128-byte payloads with `await client.send(...)` (the backpressure a producer uses);
 *   a burst ends when the sink answers a count that includes every event of it;
 * - pipelined requests: `outstanding` requests in flight at all times, a burst ends when every
 *   one is answered.
 * And the same two from actor to actor: a pinger actor (bench/actors/pinger.ts) sends the
 * events (awaiting `ctx.send`) or keeps the requests in flight, and answers when the sink has
 * counted them all.
 * Placement: the sink is moved to the placement's child cpu (this process and the pinger stay
 * on cpu 0).
 */
import type { MeshClient } from "../../src/actor/connect-mesh.ts";
import { startBenchMesh, type BenchMesh } from "../lib/mesh.ts";
import { PAYLOAD_128 } from "../lib/payload.ts";
import { pinProcess } from "../lib/placement.ts";
import type { PeerEnv, StreamPeer, StreamSession } from "./types.ts";

const SINK_YAML = (name: string, runtime = "bun", meshSettings = "", traceLines = false) => `mesh: { name: ${name}, events: ${traceLines}, runtime: ${runtime}${meshSettings} }
supervisor:
  children:
    - { actor: sink, module: "{BENCH_ACTORS}/sink.ts" }
`;

const PINGER_SINK_YAML = (name: string) => `mesh: { name: ${name}, events: false }
supervisor:
  children:
    - { actor: pinger, module: "{BENCH_ACTORS}/pinger.ts" }
    - { actor: sink, module: "{BENCH_ACTORS}/sink.ts" }
`;

async function openSink(env: PeerEnv, label: string, yaml: (name: string) => string = SINK_YAML): Promise<{ mesh: BenchMesh; client: MeshClient }> {
  const mesh = await startBenchMesh(yaml(`${label}-${Math.random().toString(36).slice(2, 6)}`));
  try {
    if (env.placement.childCpu !== undefined && !pinProcess(mesh.pid("sink"), env.placement)) {
      throw new Error(`could not pin the sink actor to cpu ${env.placement.childCpu}`);
    }
    return { mesh, client: await mesh.client() };
  } catch (error) {
    await mesh[Symbol.asyncDispose]();
    throw error;
  }
}

async function countAtSink(client: MeshClient): Promise<number> {
  return (await client.request("sink", { op: "count" }, { timeoutMs: 60_000 })).payload.count as number;
}

/** Events client → actor, every one handled (and acknowledged) before the burst counts as done. */
export const meshEvents: StreamPeer = meshEventsOn("bun");

/**
 * The same with the sink's trace lines on, as a mesh file that does not say `events: false`
 * runs it: the other actor-path contenders measure the path with them off, and a `handled`
 * line per event costs the sink about half as much CPU again (docs/benchmarks.md).
 */
export const meshEventsTraced: StreamPeer = meshEventsOn("bun", { name: "actor path events, trace lines on (the default)", traceLines: true });

/**
 * The same with the sink actor on `runtime` (the deno scenario), with `meshSettings` on the mesh
 * line (the nats scenario), or with the sink's trace lines on (`traceLines`).
 */
export function meshEventsOn(
  runtime: "bun" | "deno",
  { meshSettings = "", name = runtime === "bun" ? "actor path events" : "actor path events, Deno sink", traceLines = false }: { meshSettings?: string; name?: string; traceLines?: boolean } = {},
): StreamPeer {
  return {
  name,
  async open(env) {
    const { mesh, client } = await openSink(env, "events", (mesh) => SINK_YAML(mesh, runtime, meshSettings, traceLines));
    let expected = await countAtSink(client);
    const session: StreamSession = {
      frameBytes: 0,
      meshDir: mesh.dir,
      async send(n) {
        for (let i = 0; i < n; i++) await client.send("sink", PAYLOAD_128);
        expected += n;
        const seen = await countAtSink(client);
        if (seen !== expected) throw new Error(`actor path events: the sink counted ${seen}, expected ${expected}`);
      },
      received: () => countAtSink(client),
      [Symbol.asyncDispose]: () => mesh[Symbol.asyncDispose](),
    };
    return session;
  },
};
}

/** Requests client → actor with `outstanding` in flight at all times. */
export function meshPipelined(outstanding = 1000): StreamPeer {
  return {
    name: `actor path requests, ${outstanding} outstanding`,
    async open(env) {
      const { mesh, client } = await openSink(env, "pipelined");
      let answered = 0;
      const session: StreamSession = {
        frameBytes: 0,
        async send(n) {
          let started = 0;
          const lane = async () => {
            while (started < n) {
              started++;
              await client.request("sink", PAYLOAD_128, { timeoutMs: 60_000 });
              answered++;
            }
          };
          await Promise.all(Array.from({ length: Math.min(outstanding, n) }, lane));
        },
        received: async () => answered,
        [Symbol.asyncDispose]: () => mesh[Symbol.asyncDispose](),
      };
      return session;
    },
  };
}

/** Events actor → actor: the pinger sends `n` with `await ctx.send`, then answers the sink's count. */
export const actorEvents: StreamPeer = {
  name: "actor to actor events",
  async open(env) {
    const { mesh, client } = await openSink(env, "a2a-events", PINGER_SINK_YAML);
    let expected = 0;
    const session: StreamSession = {
      frameBytes: 0,
      async send(n) {
        const reply = await client.request("pinger", { op: "events", n, target: "sink" }, { timeoutMs: 120_000 });
        expected += n;
        if (reply.payload.count !== expected) throw new Error(`actor to actor events: the sink counted ${reply.payload.count}, expected ${expected}`);
      },
      received: () => countAtSink(client),
      [Symbol.asyncDispose]: () => mesh[Symbol.asyncDispose](),
    };
    return session;
  },
};

/** Requests actor → actor with `outstanding` in flight at all times, kept by the pinger. */
export function actorPipelined(outstanding = 1000): StreamPeer {
  return {
    name: `actor to actor requests, ${outstanding} outstanding`,
    async open(env) {
      const { mesh, client } = await openSink(env, "a2a-pipelined", PINGER_SINK_YAML);
      let answered = 0;
      const session: StreamSession = {
        frameBytes: 0,
        async send(n) {
          const reply = await client.request("pinger", { op: "pipelined", n, outstanding, target: "sink" }, { timeoutMs: 120_000 });
          if (reply.payload.answered !== n) throw new Error(`actor to actor requests: ${reply.payload.answered} of ${n} answered`);
          answered += n;
        },
        received: async () => answered,
        [Symbol.asyncDispose]: () => mesh[Symbol.asyncDispose](),
      };
      return session;
    },
  };
}
