import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { connectMesh } from "../actor/connect-mesh.ts";
import { createLogger } from "../../mesh/logger.ts";
import type { HermesError } from "../../mesh/errors.ts";
import { loadMeshFile } from "../supervisor/mesh-file.ts";
import { startMesh } from "../supervisor/mesh-runtime.ts";

const DEMO_MESH = join(import.meta.dirname, "../../actors/mesh.yaml");

/** `hermes-mesh demo [--seconds N]`: parses its arguments and runs the demo. */
export async function runDemoCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { seconds: { type: "string" }, help: { type: "boolean", short: "h" } } });
  if (values.help) {
    console.log("Usage: hermes-mesh demo [--seconds N]\n\nStarts the example mesh (actors/mesh.yaml) in a private directory, talks to it, kills an\nactor with SIGKILL under load to show that nothing is lost, measures N seconds (default 2) of\nround trips, and stops it.");
    return 0;
  }
  const seconds = values.seconds === undefined ? 2 : Number(values.seconds);
  if (!(seconds > 0 && seconds <= 3600)) {
    console.error(`hermes-mesh demo: --seconds must be a number of seconds between 0 and 3600, got '${values.seconds}'`);
    return 2;
  }
  return runDemo(seconds);
}

/**
 * The main job: the example mesh with its supervisor tree, each actor its own process on a
 * Unix socket, no broker, key or network. Shows routing, progress, a crash under load with
 * every request still answered once, and the hop latency.
 */
export async function runDemo(seconds = 2): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "hermes-mesh-demo-"));
  const started = performance.now();
  const mesh = await startMesh(loadMeshFile(DEMO_MESH), { dir: join(dir, "run"), log: createLogger({ component: "supervisor" }, () => {}) });
  try {
    console.log(`mesh '${mesh.name}' up in ${Math.round(performance.now() - started)} ms (${DEMO_MESH}), sockets in ${mesh.dir}`);
    // Actors only: a member's own client links (such as the orchestrator's) have no process of their own.
    const actors = mesh.registry.snapshot().filter((e) => e.kind !== "client" && e.pid !== undefined);
    const width = Math.max(...actors.map((e) => e.address.length));
    for (const e of actors) console.log(`  ${e.address.padEnd(width)}  pid ${String(e.pid).padEnd(7)}  ${e.socket}`);
    const client = await connectMesh({ dir: mesh.dir, name: "demo" });

    const reply = await client.request("echo", { text: "你好, hermes 🌍" }, { timeoutMs: 5000 });
    console.log(`request     -> ${reply.source_agent} answered ${JSON.stringify(reply.payload)} (trace ${reply.trace_id})`);

    const steps: unknown[] = [];
    await client.request({ capability: "echo" }, { progress: 3 }, { onProgress: (p) => steps.push(p.step) });
    console.log(`capability  -> progress ${steps.join(", ")}, then the response`);

    const subscribers = client.publish("demo.greeting", { hello: "world" });
    console.log(`publish     -> demo.greeting delivered to ${subscribers} subscribing actor(s)`);

    const missing = await client.request("nobody", {}).catch((e: HermesError) => e);
    console.log(`unroutable  -> error ${(missing as HermesError).code} ${(missing as HermesError).codeName}: ${(missing as HermesError).message}`);

    const victim = mesh.registry.byAddress("echo#0")!;
    const inFlight = Array.from({ length: 500 }, (_, i) => client.request("echo#0", { i }, { timeoutMs: 30_000 }));
    process.kill(victim.pid!, "SIGKILL");
    const answers = await Promise.all(inFlight);
    const intact = answers.every((a, i) => a.payload.i === i);
    const after = mesh.registry.byAddress("echo#0")!;
    console.log(`kill -9     -> echo#0 (pid ${victim.pid}) killed with 500 requests in flight: ${answers.length} answered, ${intact ? "all intact" : "SOME WRONG"}; restarted as pid ${after.pid} (restarts ${after.restarts})`);

    const samples: number[] = [];
    const until = performance.now() + seconds * 1000;
    while (performance.now() < until) {
      const t0 = performance.now();
      await client.request("echo#1", { data: "x".repeat(128) });
      samples.push((performance.now() - t0) * 1000);
    }
    samples.sort((a, b) => a - b);
    const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!.toFixed(1);
    console.log(`latency     -> ${samples.length} round trips in ${seconds} s: p50 ${at(0.5)} us, p99 ${at(0.99)} us (client process to actor process)`);
    await client.close();
    console.log(`next: npx hermes-mesh up ${DEMO_MESH}   then, in another terminal: npx hermes-mesh ps; npx hermes-mesh send echo '{"text":"hi"}'`);
    return intact ? 0 : 1;
  } finally {
    await mesh.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
