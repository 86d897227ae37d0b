/**
 * Hop contender: a real mesh (supervisor in this process, every actor its own process) with a
 * pinger actor (bench/actors/pinger.ts) and an echo actor (actors/echo.ts). This process asks
 * the pinger for n round trips to the echo; the pinger times each and sends the samples back.
 * Placement: both actors start on this process's cpu (0, which they inherit); for cross core
 * the echo is then moved to the placement's child cpu, so the hop crosses cores as the raw
 * baseline's does (this process and the pinger both wait on cpu 0).
 */
import { allowedCpus, pinProcess, type Placement } from "../lib/placement.ts";
import type { MeshClient } from "../../src/actor/connect-mesh.ts";
import { LatencyHistogram } from "../lib/histogram.ts";
import { startBenchMesh, type BenchMesh } from "../lib/mesh.ts";
import type { OpenLoopResult } from "../lib/open-loop.ts";
import { processMemory } from "../lib/proc-memory.ts";
import type { OpenLoopPeer, OpenLoopSession, PeerEnv, SampledRoundTripPeer } from "./types.ts";

/** The mesh: pinger first (children start in order), then the echo it calls. */
export function hopMeshYaml(name: string, runtime: "bun" | "deno" = "bun", meshSettings = ""): string {
  return `mesh: { name: ${name}, events: ${process.env.HM_BENCH_EVENTS === "0" ? "false" : "true"}, runtime: ${runtime}${meshSettings} }
supervisor:
  children:
    - { actor: pinger, module: "{BENCH_ACTORS}/pinger.ts" }
    - { actor: echo, module: "{ACTORS}/echo.ts" }
`;
}

/** Harness-side patience per batch: generous, the pinger reports its own timings. */
const BATCH_TIMEOUT_MS = 120_000;

/** The hop mesh on its placement: both actors on cpu 0, the echo moved to the child cpu for cross core; checked in /proc. */
async function openHopMesh(placement: Placement, runtime: "bun" | "deno" = "bun", meshSettings = ""): Promise<{ mesh: BenchMesh; client: MeshClient }> {
  const mesh = await startBenchMesh(hopMeshYaml(`hop-${slug(placement)}-${Math.random().toString(36).slice(2, 6)}`, runtime, meshSettings));
  try {
    if (placement.childCpu !== undefined && placement.childCpu !== 0) {
      if (!pinProcess(mesh.pid("echo"), placement)) throw new Error(`could not pin the echo actor to cpu ${placement.childCpu}`);
    }
    // Checked, not assumed: each actor runs where the placement says (it inherited cpu 0 or was moved).
    if (placement.childCpu !== undefined) {
      const where = { pinger: allowedCpus(mesh.pid("pinger")), echo: allowedCpus(mesh.pid("echo")) };
      if (where.pinger !== "0" || where.echo !== String(placement.childCpu)) {
        throw new Error(`actor placement is pinger on cpus ${where.pinger}, echo on ${where.echo}; expected 0 and ${placement.childCpu}`);
      }
    }
    return { mesh, client: await mesh.client() };
  } catch (error) {
    await mesh[Symbol.asyncDispose]();
    throw error;
  }
}

export const meshHop: SampledRoundTripPeer = meshHopOn("bun");

/**
 * The actor hop with both actors on `runtime` (the deno scenario compares the two), or with
 * `meshSettings` added to the mesh line (the nats scenario's `, transport: nats, …`).
 */
export function meshHopOn(runtime: "bun" | "deno", meshSettings = "", name = runtime === "bun" ? "actor hop" : "actor hop, Deno"): SampledRoundTripPeer {
  return {
  name,
  async open({ placement }: PeerEnv) {
    const { mesh, client } = await openHopMesh(placement, runtime, meshSettings);
    try {
      const rss = () => ({ pinger: processMemory(mesh.pid("pinger")).rss, echo: processMemory(mesh.pid("echo")).rss });
      const before = rss();
      let hops = 0;
      return {
        async roundTrips(n, payloadBytes = 128) {
          const reply = await client.request("pinger", { n, bytes: payloadBytes }, { timeoutMs: BATCH_TIMEOUT_MS });
          const samples = reply.payload.samples;
          if (!Array.isArray(samples) || samples.length !== n) throw new Error(`pinger answered ${Array.isArray(samples) ? samples.length : "no"} samples for ${n} round trips`);
          hops += n;
          return samples as number[];
        },
        note() {
          const after = rss();
          return `actor hop (${placement.name}): RSS of the pinger ${before.pinger.toFixed(0)} -> ${after.pinger.toFixed(0)} MB, of the echo ${before.echo.toFixed(0)} -> ${after.echo.toFixed(0)} MB over ${hops} hops (warm-ups included)`;
        },
        [Symbol.asyncDispose]: () => mesh[Symbol.asyncDispose](),
      };
    } catch (error) {
      await mesh[Symbol.asyncDispose]();
      throw error;
    }
  },
};
}

function slug(placement: Placement): string {
  return placement.name.replace(/[^a-z0-9]+/g, "-");
}

/**
 * The actor hop under open-loop load: the pinger runs the schedule itself (bench/lib/open-loop.ts)
 * against the echo actor and sends back its histograms. The pinger needs a concurrency of 1
 * only: its one handler keeps many requests outstanding.
 */
export const meshOpenLoop: OpenLoopPeer = {
  name: "actor hop",
  async open(env: PeerEnv): Promise<OpenLoopSession> {
    const { mesh, client } = await openHopMesh(env.placement);
    return {
      async run(spec) {
        const r = (await client.request("pinger", { op: "open", rate: spec.rate, durationMs: spec.durationMs }, { timeoutMs: BATCH_TIMEOUT_MS })).payload as Record<string, unknown>;
        return {
          ...(r as unknown as OpenLoopResult),
          fromScheduled: LatencyHistogram.decode(String(r.fromScheduled)),
          fromSent: LatencyHistogram.decode(String(r.fromSent)),
          sendLag: LatencyHistogram.decode(String(r.sendLag)),
        };
      },
      async closedLoop(concurrency, ms) {
        return Number((await client.request("pinger", { op: "closed", concurrency, ms }, { timeoutMs: BATCH_TIMEOUT_MS })).payload.rate);
      },
      [Symbol.asyncDispose]: () => mesh[Symbol.asyncDispose](),
    };
  },
};
