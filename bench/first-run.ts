/**
 * What a first run costs, and what the standby host's rehearsal saves (src/actor/rehearsal.ts):
 * in a fresh process, a MeshNode listening, a dial with its hello both ways, and the first
 * requests over a RequestChannel, each timed; with `--rehearsed`, after rehearse(). JavaScriptCore
 * runs a function slowly its first few times, and a restart is all first times.
 *
 * Run: `bun bench/first-run.ts` and `bun bench/first-run.ts --rehearsed`, a few times each,
 * interleaved (each run is one fresh process).
 */
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rehearse } from "../src/actor/rehearsal.ts";
import { MeshNode } from "../mesh/mesh-node.ts";
import { RequestChannel } from "../mesh/requests.ts";
import { dial } from "../mesh/socket-transport.ts";

const rehearsed = process.argv.includes("--rehearsed");
const r0 = performance.now();
if (rehearsed) await rehearse();
const rehearsalMs = performance.now() - r0;
const path = join(tmpdir(), `hermes-first-run-${process.pid}.sock`);
const t0 = performance.now();
const node = await MeshNode.start({
  address: "receiver",
  socketPath: path,
  // Answers go back on the connection their request came on: no routes needed.
  routes: { resolveTarget: () => [], withCapability: () => [], subscribersOf: () => [], known: () => [], byAddress: () => undefined },
  pick: () => undefined,
  onRequest: (served) => served.respond(served.request.payload),
});
const t1 = performance.now();
const connection = await dial({ path }, { node: "client" });
const t2 = performance.now();
const channel = new RequestChannel(connection, "client");
const rtts: number[] = [];
for (let i = 0; i < 10; i++) {
  const at = performance.now();
  await channel.request({ target_agent: "receiver" }, { data: "x".repeat(100) }, { timeoutMs: 5000 });
  rtts.push(performance.now() - at);
}
const ms = (n: number) => `${n.toFixed(2)} ms`;
console.log(`${rehearsed ? `rehearsed (${ms(rehearsalMs)})` : "cold"}: listen ${ms(t1 - t0)}, dial and hello ${ms(t2 - t1)}, request 1 ${ms(rtts[0]!)}, 2 ${ms(rtts[1]!)}, 3 ${ms(rtts[2]!)}, 10 ${ms(rtts[9]!)}`);
await connection.close();
await node.close();
rmSync(path, { force: true });
