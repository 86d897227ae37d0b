/**
 * Run by Deno (test/deno/process-child.test.ts): processChild on node:child_process, as a
 * supervisor on Deno spawns. Prints one JSON line of what each case saw.
 */
import { processChild } from "../../src/supervisor/process-child.ts";

const deno = process.execPath;
const script = (code: string) => [deno, "eval", code];
const failure = (error: unknown) => ({ name: (error as Error).name, message: (error as Error).message });

const lines: string[] = [];
const errors: string[] = [];
const drained = await processChild(script("console.log('a'); console.log('up'); console.error('oops'); process.stdout.write('tail'); process.exit(3)"), {
  env: { HM_X: "forty-two" },
  onStdout: (line) => lines.push(line),
  onStderr: (line) => errors.push(line),
  ready: (line) => line === "up",
})();
const exit = await drained.exited;
const env: string[] = [];
const withEnv = await processChild(script("console.log(process.env.HM_X); console.log(process.cwd())"), { env: { HM_X: "forty-two" }, cwd: "/", onStdout: (line) => env.push(line) })();
await withEnv.exited;
const missing = await processChild(["/nonexistent/hermes-child"])().then(() => undefined, failure);
const early = await processChild(script("process.exit(4)"), { ready: () => true, name: "actor early" })().then(() => undefined, failure);
const slow = await processChild(script("setInterval(() => {}, 1 << 30)"), { ready: () => false, readyTimeoutMs: 300 })().then(() => undefined, failure);
const up = script("console.log('up'); setInterval(() => {}, 1 << 30)");
const stopped = await processChild(up, { ready: (line) => line === "up" })();
stopped.stop();
const stop = await stopped.exited;
stopped.kill(); // after the exit: a no-op
const killed = await processChild(up, { ready: (line) => line === "up" })();
killed.kill();
console.log(JSON.stringify({ pid: drained.pid, exit, lines, errors, env, missing, early, slow, stop, kill: await killed.exited }));
