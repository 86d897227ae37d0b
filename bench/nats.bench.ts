/**
 * NATS scenario (issue 15): the same meshes over NATS JetStream next to Unix sockets and to raw
 * nats.js, in one run:
 * - actor hop p50/p99 (pinger actor → echo actor, timed in the pinger, bench/adapters/mesh-hop.ts)
 *   with `transport: nats` and on Unix sockets; raw nats.js request/reply (core NATS, its own
 *   server: bench/adapters/nats.ts) timed from here;
 * - events client → sink actor (`await send`, every one counted) over NATS and over sockets;
 *   raw nats.js publish (core NATS, no JetStream) with cumulative acks.
 * The JetStream server is one nats-server with `-js`, on loopback, unpinned like everything here.
 *
 * Run alone: `bun bench/nats.bench.ts [--quick]`.
 */
import { runStandalone } from "./lib/standalone.ts";
import { meshHopOn } from "./adapters/mesh-hop.ts";
import { meshEventsOn } from "./adapters/mesh-stream.ts";
import { natsRequest, natsStream } from "./adapters/nats.ts";
import type { RoundTripSession, SampledRoundTripSession, StreamSession } from "./adapters/types.ts";
import { LatencyHistogram, median } from "./lib/histogram.ts";
import { UNPINNED } from "./lib/placement.ts";
import { progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, tempDir, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";
import { missingServer, NATS_SERVER, startNatsServer } from "./lib/servers.ts";
import { timedBurst } from "./stream.bench.ts";

const HOP_BATCH = 500;

export async function runNats(options: ScenarioOptions): Promise<ScenarioResult> {
  const missing = missingServer(NATS_SERVER) ?? natsRequest.unavailable?.();
  if (missing) return { figures: [], notes: [], skipped: [`nats: ${missing}`] };
  const figures: Figure[] = [];
  const notes: string[] = [];
  using dir = tempDir();
  await using server = await startNatsServer(UNPINNED, dir.path, { jetstream: true });
  const overNats = `, transport: nats, nats: { servers: ["${server.url}"] }`;
  const placement = UNPINNED;
  const common = (name: string, unit: string, better: "lower" | "higher") => ({ scenario: "nats", name, unit, better, placement: placement.name });
  try {
    // Round trips: the two hop meshes (timed in their pingers) and raw nats.js request/reply (timed here).
    const hops = [
      { label: "actor hop over NATS JetStream", peer: meshHopOn("bun", overNats, "actor hop over NATS JetStream") },
      { label: "actor hop over Unix sockets", peer: meshHopOn("bun") },
    ];
    const sessions: Array<{ label: string; session: SampledRoundTripSession; histogram: LatencyHistogram }> = [];
    let raw: { session: RoundTripSession; histogram: LatencyHistogram } | undefined;
    try {
      for (const { label, peer } of hops) {
        progress(`nats: starting ${label}`);
        sessions.push({ label, session: await peer.open({ dir: dir.path, placement }), histogram: new LatencyHistogram() });
      }
      progress("nats: starting raw nats.js request/reply");
      raw = { session: await natsRequest.open({ dir: dir.path, placement }), histogram: new LatencyHistogram() };
      for (const s of sessions) await s.session.roundTrips(options.quick ? 100 : 1000);
      for (let i = 0; i < 500; i++) await raw.session.roundTrip();
      const batch = options.quick ? HOP_BATCH / 2 : HOP_BATCH;
      for (let round = 0; round < options.rounds; round++) {
        progress(`nats: round trips, round ${round + 1}/${options.rounds}`);
        for (const s of rotated(sessions, round)) for (const ns of await s.session.roundTrips(batch)) s.histogram.record(ns);
        for (let i = 0; i < batch; i++) {
          const t = Bun.nanoseconds();
          await raw.session.roundTrip();
          raw.histogram.record(Bun.nanoseconds() - t);
        }
      }
      const rawSummary = raw.histogram.summary();
      const unix = sessions[1]!.histogram.summary();
      for (const s of sessions) {
        const mine = s.histogram.summary();
        for (const key of ["p50", "p99"] as const) {
          figures.push({ ...common(`${s.label} ${key}`, "us", "lower"), value: mine[key], baseline: { name: `raw nats.js request ${key}`, value: rawSummary[key] }, detail: { samples: mine.count } });
        }
      }
      notes.push(`nats: actor hop p50 over NATS JetStream ${sessions[0]!.histogram.summary().p50.toFixed(0)} us against ${unix.p50.toFixed(0)} us over Unix sockets (${(sessions[0]!.histogram.summary().p50 / unix.p50).toFixed(1)}x) and ${rawSummary.p50.toFixed(0)} us for a raw core NATS request`);
    } finally {
      for (const s of sessions) await disposeQuietly(s.session);
      if (raw) await disposeQuietly(raw.session);
    }

    // One-way events with acknowledgement.
    const streams = [
      { label: "events client to actor over NATS JetStream", peer: meshEventsOn("bun", { meshSettings: overNats, name: "events over NATS JetStream" }) },
      { label: "events client to actor over Unix sockets", peer: meshEventsOn("bun") },
      { label: "raw nats.js publish (core NATS)", peer: natsStream },
    ];
    const runs: Array<{ label: string; session: StreamSession; rates: number[] }> = [];
    try {
      for (const { label, peer } of streams) {
        progress(`nats: starting ${label}`);
        runs.push({ label, session: await peer.open({ dir: dir.path, placement }), rates: [] });
      }
      const burst = options.quick ? 3_000 : 20_000;
      for (const run of runs) await timedBurst(run.session, burst / 5);
      for (let round = 0; round < options.rounds; round++) {
        progress(`nats: events, round ${round + 1}/${options.rounds}`);
        for (const run of rotated(runs, round)) run.rates.push(await timedBurst(run.session, burst));
      }
      const rawRate = median(runs[2]!.rates);
      for (const run of runs.slice(0, 2)) {
        figures.push({ ...common(`${run.label} msg/s`, "msg/s", "higher"), value: median(run.rates), baseline: { name: "raw nats.js publish msg/s", value: rawRate } });
      }
    } finally {
      for (const run of runs) await disposeQuietly(run.session);
    }
  } finally {
    progressDone();
  }
  return { figures, notes };
}

export const natsScenario: Scenario = {
  name: "nats",
  description: "the actor hop and acknowledged events over NATS JetStream next to Unix sockets and raw nats.js request/publish",
  run: runNats,
};

if (import.meta.main) await runStandalone(runNats, "nats");
