/**
 * Fan-in scenario: one-way throughput with acks from N sender processes (1, 2 and 4) to ONE
 * receiver process, all senders at once; a burst ends when the receiver acknowledged every
 * sender's last message. Contenders (bench/adapters/fan-in.ts): hermes event envelopes through
 * `Connection.send` to a listener granting the default window (4096) per connection, and raw
 * length-prefixed 128-byte frames to a raw sink answering each read with a cumulative count,
 * the baseline. Envelopes/s and payload MB/s, summed over the senders.
 * On 2 cores, 4 senders and a receiver share two cpus: past one sender, the senders compete
 * with the receiver for cpu time, so the figures show how throughput holds up under that,
 * not more parallelism.
 * Placements: same core (everything on cpu 0), cross core (senders on cpu 0, the receiver on
 * cpu 1), unpinned on both cores (quick: only this one). The same processes are moved.
 *
 * Run alone: `bun bench/fanin.bench.ts [--quick]`.
 */
import { runStandalone } from "./lib/standalone.ts";
import { availableParallelism } from "node:os";
import { hermesFanin, rawFanin } from "./adapters/fan-in.ts";
import type { FaninPeer, FaninSession } from "./adapters/types.ts";
import type { Chart } from "./lib/chart-data.ts";
import { median } from "./lib/histogram.ts";
import { RAW_128 } from "./lib/payload.ts";
import { allowedCpus, availablePlacements, BOTH_CORES, pinPid, taskset, type Placement } from "./lib/placement.ts";
import { progress, progressDone, type Figure } from "./lib/report.ts";
import { disposeQuietly, rotated, tempDir, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

const PEERS: readonly FaninPeer[] = [hermesFanin, rawFanin];
const BASELINE = rawFanin;
export const SENDERS = [1, 2, 4] as const;

interface Run {
  peer: FaninPeer;
  session: FaninSession;
  senders: number;
  /** Messages per sender per burst. */
  burst: number;
  rates: number[];
}

/** Where each process of a fan-in runs: the receiver is pid 0. */
export function faninCpus(placement: Placement, i: number, cores = availableParallelism()): string | undefined {
  if (placement === BOTH_CORES) return `0-${cores - 1}`;
  if (placement.childCpu === undefined) return undefined;
  return i === 0 ? String(placement.childCpu) : "0";
}

function place(session: FaninSession, placement: Placement): void {
  session.pids.forEach((pid, i) => {
    const cpus = faninCpus(placement, i);
    if (cpus === undefined) return;
    if (!pinPid(pid, cpus) || allowedCpus(pid) !== cpus) throw new Error(`could not move fan-in process ${i} (pid ${pid}) to cpus ${cpus}`);
  });
}

/** All senders at once; messages per second summed over them. */
async function timedBurst(run: Run): Promise<number> {
  const t0 = Bun.nanoseconds();
  await run.session.burst(run.burst, run.senders);
  return ((run.burst * run.senders) / (Bun.nanoseconds() - t0)) * 1e9;
}

export async function runFanin(options: ScenarioOptions): Promise<ScenarioResult> {
  const available = availablePlacements();
  const both = taskset() && availableParallelism() > 1;
  const placements = both ? (options.quick ? [BOTH_CORES] : [...available.placements, BOTH_CORES]) : available.placements;
  const notes = available.note ? [`fanin: ${available.note}`] : [];
  const maxSenders = Math.max(...SENDERS);
  using dir = tempDir();
  const sessions: Array<{ peer: FaninPeer; session: FaninSession }> = [];
  const byPlacement = new Map<Placement, Run[]>();
  const sent = new Map<FaninSession, number>();
  try {
    for (const peer of PEERS) {
      progress(`fanin: starting ${peer.name}, 1 receiver and ${maxSenders} senders`);
      const session = await peer.open({ dir: dir.path, senders: maxSenders });
      sessions.push({ peer, session });
      sent.set(session, 0);
    }
    for (const placement of placements) {
      for (const { session } of sessions) place(session, placement);
      const runs: Run[] = sessions.flatMap(({ peer, session }) => SENDERS.map((senders) => ({ peer, session, senders, burst: 0, rates: [] })));
      byPlacement.set(placement, runs);
      const sliceMs = options.durationMs / placements.length / (options.rounds * runs.length);
      for (const run of runs) {
        progress(`fanin: warming up ${run.peer.name}, ${run.senders} to 1 (${placement.name})`);
        run.burst = options.quick ? 5000 : 20_000;
        const rate = await timedBurst(run);
        sent.set(run.session, sent.get(run.session)! + run.burst * run.senders);
        run.burst = Math.round(Math.min(5_000_000, Math.max(5000, (rate * sliceMs) / 1000 / run.senders)));
      }
      for (let round = 0; round < options.rounds; round++) {
        progress(`fanin (${placement.name}): round ${round + 1}/${options.rounds} (${runs.length} runs, ~${Math.round(sliceMs)} ms each)`);
        for (const run of rotated(runs, round)) {
          run.rates.push(await timedBurst(run));
          sent.set(run.session, sent.get(run.session)! + run.burst * run.senders);
        }
      }
    }
    for (const { peer, session } of sessions) {
      const received = await session.received();
      if (received !== sent.get(session)) notes.push(`fanin: ${peer.name} receiver counted ${received} of ${sent.get(session)}: FIGURES INVALID`);
    }
    if (!notes.some((n) => n.includes("INVALID"))) notes.push("fanin: each receiver counted exactly the messages its senders sent");
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
  const mbps = (rate: number) => (rate * RAW_128.length) / 1e6;
  for (const [placement, runs] of byPlacement) {
    const rateOf = (peer: FaninPeer, n: number) => median(runs.find((r) => r.peer === peer && r.senders === n)!.rates);
    for (const n of SENDERS) {
      const rate = rateOf(hermesFanin, n);
      const base = rateOf(BASELINE, n);
      const common = { scenario: "fanin", placement: placement.name, better: "higher" } as const;
      const run = runs.find((r) => r.peer === hermesFanin && r.senders === n)!;
      figures.push({
        ...common, name: `${hermesFanin.name}, ${n} to 1 envelopes/s`, unit: "msg/s", value: rate,
        baseline: { name: `${BASELINE.name}, ${n} to 1 frames/s`, value: base },
        detail: { senders: n, burstPerSender: run.burst, wireMBps: (rate * run.session.frameBytes) / 1e6, roundsPerSec: run.rates.map(Math.round) },
      });
      figures.push({ ...common, name: `${hermesFanin.name}, ${n} to 1 payload MB/s`, unit: "MB/s", value: mbps(rate), baseline: { name: `${BASELINE.name}, ${n} to 1 payload MB/s`, value: mbps(base) } });
    }
    charts.push({ kind: "bars", title: `fanin: messages/s, N senders to 1, ${placement.name}`, unit: "msg/s", bars: PEERS.flatMap((peer) => SENDERS.map((n) => ({ label: `${peer.name}, ${n} to 1`, value: rateOf(peer, n), baseline: peer === BASELINE }))) });
    for (const r of runs) rounds.push({ peer: r.peer.name, placement: placement.name, senders: r.senders, burstPerSender: r.burst, rates: r.rates.map(Math.round) });
  }
  notes.push("fanin: rates are summed over the senders and timed in this process from the start command to the last sender's 'all acknowledged'");
  return { figures, notes, rounds, charts };
}

export const faninScenario: Scenario = {
  name: "fanin",
  description: "one-way throughput with acks, 1, 2 and 4 sender processes to one receiver: hermes Connection.send vs raw framed socket",
  run: runFanin,
};

if (import.meta.main) await runStandalone(runFanin, "fanin");
