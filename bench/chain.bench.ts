/**
 * Chain scenario: a message goes around a ring of processes, A -> B -> C -> ... -> A, for 2 to
 * 8 hops, and the whole trip is timed where it starts. Contenders: a ring of actors in a real
 * mesh forwarding an event by name (bench/adapters/mesh-ring.ts; timed inside ring0) and a
 * ring of raw relays on plain Unix sockets started from this process (bench/adapters/raw-ring.ts),
 * the baseline. Reports each trip's p50 and p99, the cost per hop, and how the trip grows with
 * hops (the least-squares slope of p50 over the hop count).
 * Placements: same core (every member on cpu 0) and cross core, alternating (member i on cpu
 * i mod 2: every hop crosses cores). The same processes are moved between placements.
 *
 * Run alone: `bun bench/chain.bench.ts [--quick]`.
 */
import { runStandalone } from "./lib/standalone.ts";
import { meshRing } from "./adapters/mesh-ring.ts";
import { rawRing } from "./adapters/raw-ring.ts";
import type { RingPeer, RingSession } from "./adapters/types.ts";
import type { Chart } from "./lib/chart-data.ts";
import { LatencyHistogram } from "./lib/histogram.ts";
import { allowedCpus, availablePlacements, measuredPlacements, pinPid, type Placement } from "./lib/placement.ts";
import { progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, tempDir, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

const PEERS: readonly RingPeer[] = [meshRing, rawRing];
const BASELINE = rawRing;
/** Ring members: the longest trip visits them all. */
export const RING_SIZE = 8;
export const HOPS = { full: [2, 3, 4, 6, 8], quick: [2, 4, 8] } as const;

interface Run {
  peer: RingPeer;
  session: RingSession;
  hops: number;
  histogram: LatencyHistogram;
  /** Trips that came back with another hop count than they were sent for (must stay 0). */
  wrongHops: number;
  trips: number;
}

/** The cpu of ring member `i` in a placement: cross core alternates, so every hop crosses. */
export function memberCpu(placement: Placement, i: number): number {
  return placement.childCpu === undefined || placement.childCpu === 0 ? 0 : i % 2;
}

/** Least-squares slope of y over x (0 for fewer than two points). */
export function slope(points: ReadonlyArray<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** Batches of trips for about `ms`; counts trips that did not come back after exactly `hops` hops. */
export async function measureTrips(run: Pick<Run, "session" | "hops" | "wrongHops" | "trips">, ms: number, batch: number, histogram?: LatencyHistogram): Promise<void> {
  const end = performance.now() + ms;
  do {
    const { samples, hopsSeen } = await run.session.trips(batch, run.hops);
    if (histogram) for (const ns of samples) histogram.record(ns);
    for (const h of hopsSeen) if (h !== run.hops) run.wrongHops++;
    run.trips += samples.length;
  } while (performance.now() < end);
}

/** Moves every member but this process to its cpu for the placement; throws when /proc disagrees. */
function place(session: RingSession, placement: Placement): void {
  session.pids.forEach((pid, i) => {
    if (pid === process.pid || placement.childCpu === undefined) return;
    const cpu = memberCpu(placement, i);
    if (!pinPid(pid, cpu) || allowedCpus(pid) !== String(cpu)) throw new Error(`could not move ring member ${i} (pid ${pid}) to cpu ${cpu}`);
  });
}

export async function runChain(options: ScenarioOptions): Promise<ScenarioResult> {
  const available = availablePlacements();
  const placements = measuredPlacements(options.quick, available.placements);
  const note = available.note;
  const notes = note ? [`chain: ${note}`] : [];
  const hopCounts = options.quick ? HOPS.quick : HOPS.full;
  using dir = tempDir();
  const sessions: Array<{ peer: RingPeer; session: RingSession }> = [];
  const byPlacement = new Map<Placement, Run[]>();
  try {
    for (const peer of PEERS) {
      progress(`chain: starting ${peer.name} of ${RING_SIZE}`);
      sessions.push({ peer, session: await peer.open({ dir: dir.path, size: RING_SIZE }) });
    }
    // Placements one after the other (the same processes, moved): contenders and hop counts interleave within each.
    for (const placement of placements) {
      for (const { session } of sessions) place(session, placement);
      const runs: Run[] = sessions.flatMap(({ peer, session }) => hopCounts.map((hops) => ({ peer, session, hops, histogram: new LatencyHistogram(), wrongHops: 0, trips: 0 })));
      byPlacement.set(placement, runs);
      const warmupMs = (peer: RingPeer) => (peer === meshRing ? (options.quick ? 300 : 1200) : options.quick ? 80 : 300);
      for (const { peer, session } of sessions) {
        progress(`chain: warming up ${peer.name} (${placement.name})`);
        await measureTrips({ session, hops: RING_SIZE, wrongHops: 0, trips: 0 }, warmupMs(peer), 100);
      }
      const sliceMs = options.durationMs / placements.length / (options.rounds * runs.length);
      for (let round = 0; round < options.rounds; round++) {
        progress(`chain (${placement.name}): round ${round + 1}/${options.rounds} (${runs.length} runs, ${Math.round(sliceMs)} ms each)`);
        for (const run of rotated(runs, round)) await measureTrips(run, sliceMs, Math.ceil((options.quick ? 300 : 1000) / run.hops), run.histogram);
      }
      const wrong = runs.filter((r) => r.wrongHops > 0);
      for (const r of wrong) notes.push(`chain (${placement.name}): ${r.peer.name}: ${r.wrongHops} of ${r.trips} trips of ${r.hops} hops came back after another hop count: FIGURES INVALID`);
    }
    // Every trip of h hops passes members 1 .. h-1 once each: what each member forwarded must add up.
    for (const { peer, session } of sessions) {
      const forwarded = await session.forwarded();
      const runs = [...byPlacement.values()].flat().filter((r) => r.peer === peer);
      const total = forwarded.reduce((a, b) => a + b, 0);
      const measured = runs.reduce((s, r) => s + r.trips * (r.hops - 1), 0);
      if (total < measured) notes.push(`chain: ${peer.name}: members forwarded ${total} messages, fewer than the ${measured} the measured trips needed: FIGURES INVALID`);
    }
    if (!notes.some((n) => n.includes("INVALID"))) notes.push("chain: every trip came back after exactly its number of hops");
  } finally {
    progressDone();
    for (const { session } of [...sessions].reverse()) await disposeQuietly(session);
  }
  return summarize(byPlacement, notes);
}

function summarize(byPlacement: Map<Placement, Run[]>, notes: string[]): ScenarioResult {
  const figures: Figure[] = [];
  const charts: Chart[] = [];
  const rounds: unknown[] = [];
  for (const [placement, runs] of byPlacement) {
    const name = placement.childCpu === 1 ? "cross core (alternating)" : placement.name;
    const summary = new Map(runs.map((r) => [r, r.histogram.summary()]));
    const of = (peer: RingPeer, hops: number) => summary.get(runs.find((r) => r.peer === peer && r.hops === hops)!)!;
    const hopCounts = [...new Set(runs.map((r) => r.hops))];
    const common = { scenario: "chain", placement: name, unit: "us", better: "lower" } as const;
    for (const peer of PEERS.filter((p) => p !== BASELINE)) {
      for (const hops of hopCounts) {
        const mine = of(peer, hops);
        const base = of(BASELINE, hops);
        figures.push({ ...common, name: `${peer.name} ${hops} hops p50`, value: mine.p50, baseline: { name: `${BASELINE.name} ${hops} hops p50`, value: base.p50 },
          detail: { hops, perHopUs: mine.p50 / hops, baselinePerHopUs: base.p50 / hops, trips: mine.count, baselineTrips: base.count } });
        figures.push({ ...common, name: `${peer.name} ${hops} hops p99`, value: mine.p99, baseline: { name: `${BASELINE.name} ${hops} hops p99`, value: base.p99 } });
      }
      const growth = (p: RingPeer) => slope(hopCounts.map((h) => [h, of(p, h).p50]));
      figures.push({ ...common, name: `${peer.name} p50 per added hop (slope)`, value: growth(peer), baseline: { name: `${BASELINE.name} p50 per added hop`, value: growth(BASELINE) } });
      const perHop = hopCounts.map((h) => `${h}: ${(of(peer, h).p50 / h).toFixed(1)} / ${(of(BASELINE, h).p50 / h).toFixed(1)}`);
      notes.push(`chain (${name}): p50 per hop in us (${peer.name} / ${BASELINE.name}) by hops: ${perHop.join(", ")}`);
    }
    charts.push({
      kind: "lines", title: `chain: trip time by hops, ${name}`, xLabel: "hops", yLabel: "us",
      series: PEERS.flatMap((peer) => (["p50", "p99"] as const).map((k) => ({ label: `${peer.name} ${k}`, points: hopCounts.map((h): [number, number] => [h, of(peer, h)[k]]) }))),
    });
    const longest = Math.max(...hopCounts);
    charts.push({ kind: "percentiles", title: `chain, ${longest} hops, ${name}`, series: PEERS.map((peer) => ({ label: peer.name, points: runs.find((r) => r.peer === peer && r.hops === longest)!.histogram.curve() })) });
    for (const r of runs) rounds.push({ peer: r.peer.name, placement: name, hops: r.hops, wrongHops: r.wrongHops, ...summary.get(r)! });
  }
  notes.push("chain: the actor ring is timed inside ring0 (an event forwarded by name from link to link, ring0 on cpu 0); the raw ring in this process (cpu 0), which is its start");
  return { figures, notes, rounds, charts };
}

export const chainScenario: Scenario = {
  name: "chain",
  description: "multi-hop ring A -> B -> ... -> A over 2 to 8 actor processes (event forwarded by name) vs a ring of raw socket relays: trip time, per hop, growth",
  run: runChain,
};

if (import.meta.main) await runStandalone(runChain, "chain");
