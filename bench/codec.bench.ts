/**
 * Codec scenario: encode and decode of a typical envelope (a request with a 128-byte payload
 * and a seq, as a connection sends it) with plain msgpack, msgpackr records, hermes-envelope and JSON, in one
 * process, interleaved in rounds. Each is reported in ops/s next to JSON's.
 *
 * Records are sequential: a stream of envelopes (varying message_id, timestamp and seq) is
 * encoded once by one codec instance, then decoded in order by a fresh instance per pass.
 *
 * Run alone: `bun bench/codec.bench.ts [--quick]`.
 */
import { runStandalone } from "./lib/standalone.ts";
import { createRequest } from "../mesh/envelope.ts";
import { envelopeCodec, json, plainMsgpack, recordsMsgpack } from "./adapters/codecs.ts";
import type { CodecContender } from "./adapters/types.ts";
import { median } from "./lib/histogram.ts";
import { PAYLOAD_128 } from "./lib/payload.ts";
import { progress, progressDone, type Figure } from "./lib/report.ts";
import { rotated, type Scenario, type ScenarioOptions, type ScenarioResult } from "./lib/scenario.ts";

const CONTENDERS: readonly CodecContender[] = [plainMsgpack, recordsMsgpack, envelopeCodec, json];
const BASELINE = json;
const STREAM_LENGTH = 1024;

type Op = "encode" | "decode";
interface Task {
  contender: CodecContender;
  op: Op;
  /** Runs operations for about `ms` and returns how many it did and how long they took. */
  run(ms: number): { ops: number; ns: number };
}

/** A stream of typical envelopes, as a connection would send them one after another. */
export function envelopeStream(length = STREAM_LENGTH): Record<string, unknown>[] {
  const start = Date.now();
  return Array.from({ length }, (_, i) => ({
    ...createRequest("bench-client", { target_agent: "echo" }, PAYLOAD_128),
    timestamp: start + i,
    seq: i + 1,
  }));
}

/** Sink for results, so the engine cannot drop the work. */
let sink = 0;

function encodeTask(contender: CodecContender, envelopes: readonly unknown[]): Task {
  const encode = contender.encoder();
  let i = 0;
  return {
    contender,
    op: "encode",
    run(ms) {
      let ops = 0;
      const t0 = Bun.nanoseconds();
      const end = t0 + ms * 1e6;
      let now = t0;
      while (now < end) {
        for (let k = 0; k < 256; k++) {
          sink += encode(envelopes[i]!).length;
          i = i + 1 === envelopes.length ? 0 : i + 1;
        }
        ops += 256;
        now = Bun.nanoseconds();
      }
      return { ops, ns: now - t0 };
    },
  };
}

function decodeTask(contender: CodecContender, envelopes: readonly unknown[]): Task {
  const encode = contender.encoder();
  // A copy of each: encode() may reuse its buffer, and a Buffer's own slice() is a view.
  const frames = envelopes.map((env) => Uint8Array.from(encode(env)));
  return {
    contender,
    op: "decode",
    run(ms) {
      let ops = 0;
      let ns = 0;
      while (ns < ms * 1e6) {
        const decode = contender.decoder(); // sequential records: a fresh reader per pass, in order
        const t0 = Bun.nanoseconds();
        for (let k = 0; k < frames.length; k++) sink += (decode(frames[k]!) as { seq: number }).seq;
        ns += Bun.nanoseconds() - t0;
        ops += frames.length;
      }
      return { ops, ns };
    },
  };
}

/** Encoded bytes of a steady-state envelope (after a records codec has defined its shape). */
function steadyBytes(contender: CodecContender, envelopes: readonly unknown[]): number {
  const encode = contender.encoder();
  encode(envelopes[0]);
  return encode(envelopes[1]).length;
}

export async function runCodec(options: ScenarioOptions): Promise<ScenarioResult> {
  const envelopes = envelopeStream();
  const tasks = CONTENDERS.flatMap((c) => [encodeTask(c, envelopes), decodeTask(c, envelopes)]);
  const rates = new Map<Task, number[]>(tasks.map((t) => [t, []]));
  const sliceMs = options.durationMs / (options.rounds * tasks.length);
  for (const task of tasks) task.run(Math.min(50, sliceMs)); // warm-up: let the JIT settle
  for (let round = 0; round < options.rounds; round++) {
    progress(`codec: round ${round + 1}/${options.rounds}`);
    for (const task of rotated(tasks, round)) {
      const { ops, ns } = task.run(sliceMs);
      rates.get(task)!.push((ops / ns) * 1e9);
    }
    await Bun.sleep(0); // let timers and progress output through between rounds
  }
  progressDone();
  if (sink === 0.5) console.log("unreachable: keeps the results alive");
  const rateOf = (c: CodecContender, op: Op) => median(rates.get(tasks.find((t) => t.contender === c && t.op === op)!)!);
  const figures: Figure[] = tasks.map((task) => ({
    scenario: "codec",
    name: `${task.contender.name} ${task.op}`,
    placement: "in-process",
    unit: "ops/s",
    value: rateOf(task.contender, task.op),
    better: "higher",
    baseline: { name: `${BASELINE.name} ${task.op}`, value: rateOf(BASELINE, task.op) },
    detail: { bytes: steadyBytes(task.contender, envelopes), roundsOpsPerSec: rates.get(task)!.map(Math.round) },
  }));
  const sizes = CONTENDERS.map((c) => `${c.name} ${steadyBytes(c, envelopes)} B`).join(", ");
  return { figures, notes: [`codec: envelope size ${sizes}; ops/s is the median of ${options.rounds} interleaved rounds`] };
}

export const codecScenario: Scenario = {
  name: "codec",
  description: "encode/decode of a request envelope with a 128-byte payload: plain msgpack, msgpackr records, hermes-envelope, JSON",
  run: runCodec,
};

if (import.meta.main) await runStandalone(runCodec, "codec", false);
