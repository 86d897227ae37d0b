import { mkdtempSync, rmSync } from "node:fs";
import { parseArgs } from "node:util";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RequestChannel } from "../../mesh/request-channel.ts";
import { dial } from "../../mesh/transport.ts";
import { HermesError } from "../protocol/hermes-error.ts";

/** `hermes-mesh demo [--seconds N]`: parses its arguments and runs the demo. */
export async function runDemoCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { seconds: { type: "string" }, help: { type: "boolean", short: "h" } } });
  if (values.help) {
    console.log("Usage: hermes-mesh demo [--seconds N]\n\nStarts an echo peer in its own process on a private Unix socket and talks to it;\nthe last N seconds (default 2) measure round-trip latency.");
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
 * `hermes-mesh demo`: starts an echo peer in its own process on a private Unix socket and
 * talks to it: a request with non-ASCII text, progress, a deadline that passes, then a few
 * seconds of round trips with their latency. Needs no broker, key or network.
 */
export async function runDemo(seconds = 2): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "hermes-mesh-demo-"));
  const path = join(dir, "mesh", "echo.sock");
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "demo-echo-server.ts"), path], { stdout: "pipe", stderr: "inherit" });
  try {
    await waitForReady(child);
    console.log(`echo peer: pid ${child.pid}, listening on unix:${path}`);
    const connection = await dial({ path }, { node: "demo" });
    const channel = new RequestChannel(connection, "demo");
    console.log(`connected: codec ${connection.codec}, peer window ${connection.peer?.window}`);

    const reply = await channel.request({ target_agent: "echo" }, { text: "你好, hermes 🌍" }, { timeoutMs: 2000 });
    console.log(`request  -> response ${JSON.stringify(reply.payload)} (trace ${reply.trace_id})`);

    const steps: unknown[] = [];
    await channel.request({ target_agent: "echo" }, { progress: 3 }, { onProgress: (p) => steps.push(p.step) });
    console.log(`progress -> steps ${steps.join(", ")} then the response`);

    const timeout = await channel.request({ target_agent: "nobody" }, { ttl_demo: true }, { ttl: 0 }).catch((e: HermesError) => e);
    console.log(`ttl 0    -> error code ${(timeout as HermesError).code} ${(timeout as HermesError).codeName}`);

    const samples: number[] = [];
    const until = performance.now() + seconds * 1000;
    while (performance.now() < until) {
      const started = performance.now();
      await channel.request({ target_agent: "echo" }, { data: "x".repeat(128) });
      samples.push((performance.now() - started) * 1000);
    }
    samples.sort((a, b) => a - b);
    const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!.toFixed(1);
    console.log(`${samples.length} round trips in ${seconds} s: p50 ${at(0.5)} us, p99 ${at(0.99)} us (two processes, Unix socket)`);
    await connection.close();
    return 0;
  } finally {
    child.kill("SIGTERM");
    await child.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

async function waitForReady(child: Bun.Subprocess<"ignore", "pipe", "inherit">): Promise<void> {
  const reader = child.stdout.getReader();
  const deadline = setTimeout(() => child.kill("SIGKILL"), 10_000);
  let text = "";
  try {
    while (!text.includes("ready")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`echo peer exited (code ${child.exitCode}) before it was ready`);
      text += new TextDecoder().decode(value);
    }
  } finally {
    clearTimeout(deadline);
    reader.releaseLock();
  }
}
