/**
 * The JavaScript cost of one request round trip, without the kernel: a RequestChannel and an
 * echo RequestChannel in this one process, over two Connections whose byte streams hand each
 * written chunk to the other side on the next macrotask (setImmediate), as a socket's data
 * callback would come. Everything of the hermes path runs (envelopes, ids, codec, framing,
 * write coalescing, acks, credit, validation, the request promise), both ends on one thread,
 * so a CPU profile of this process shows all of it. The baseline is the same hand-off with
 * raw bytes and a promise per round trip, measured in the same run, interleaved.
 *
 * Run: `bun bench/loopback.ts [round trips per round] [rounds] [codec]` (codec: msgpackr-records, msgpack).
 * Profile: `bun --cpu-prof-md --cpu-prof-dir=/tmp/lp bench/loopback.ts 300000 1`.
 */
import { Connection, type ByteStream } from "../mesh/connection.ts";
import { RequestChannel } from "../mesh/requests.ts";
import { PAYLOAD_128, RAW_128 } from "./lib/payload.ts";

const perRound = Number(process.argv[2] ?? 100_000);
const rounds = Number(process.argv[3] ?? 3);
const codec = process.argv[4] ?? "msgpackr-records";

/** A byte stream whose writes reach `peer()` on the next macrotask, copied (the writer reuses its buffer). */
function handOffTo(peer: () => Connection): ByteStream {
  return {
    write(data) {
      const copy = data.slice();
      setImmediate(() => peer().handleData(copy));
      return data.length;
    },
    end() {},
  };
}

async function hermesLoop(): Promise<() => Promise<void>> {
  let client!: Connection;
  let server!: Connection;
  client = new Connection(handOffTo(() => server), "dialer", { node: "loop-client", codecs: [codec] });
  server = new Connection(handOffTo(() => client), "acceptor", { node: "loop-echo" });
  await client.ready;
  const channel = new RequestChannel(client, "loop-client");
  new RequestChannel(server, "loop-echo", (request) => request.payload);
  const route = { target_agent: "loop-echo" };
  const options = { timeoutMs: 10_000 };
  return async () => {
    await channel.request(route, PAYLOAD_128, options);
  };
}

/** Bytes the raw echo saw, so its copies are used. */
let echoed = 0;

function rawLoop(): () => Promise<void> {
  let arrived: (() => void) | undefined;
  const toClient = (bytes: Uint8Array) => {
    const copy = bytes.slice();
    setImmediate(() => {
      echoed += copy.length;
      arrived!();
    });
  };
  const toEcho = (bytes: Uint8Array) => {
    const copy = bytes.slice();
    setImmediate(() => toClient(copy));
  };
  return () => {
    const { promise, resolve } = Promise.withResolvers<void>();
    arrived = resolve;
    toEcho(RAW_128);
    return promise;
  };
}

async function measure(roundTrip: () => Promise<void>, n: number): Promise<{ us: number; cpuUs: number }> {
  const t0 = Bun.nanoseconds();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await roundTrip();
  const cpu = process.cpuUsage(cpu0);
  return { us: (Bun.nanoseconds() - t0) / n / 1000, cpuUs: (cpu.user + cpu.system) / n };
}

const contenders = { raw: rawLoop(), hermes: await hermesLoop() };
for (const roundTrip of Object.values(contenders)) await measure(roundTrip, 20_000); // warm-up
for (let round = 1; round <= rounds; round++) {
  const raw = await measure(contenders.raw, perRound);
  const hermes = await measure(contenders.hermes, perRound);
  console.log(
    `round ${round}: hermes (${codec}) ${hermes.us.toFixed(2)} us per round trip (CPU ${hermes.cpuUs.toFixed(2)} us), ` +
      `raw hand-off ${raw.us.toFixed(2)} us (CPU ${raw.cpuUs.toFixed(2)} us): ${(hermes.us - raw.us).toFixed(2)} us of hermes JavaScript, both ends`,
  );
}
if (echoed === 0) throw new Error("the raw hand-off echoed nothing");
process.exit(0);
