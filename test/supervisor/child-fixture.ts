/**
 * A supervised child for supervisor tests. Argv: <name> <logFile> [flags].
 * It appends "up <name> <pid>" to the log (once its signal handlers are in place), prints
 * "up <pid>", then waits; on SIGTERM it appends "down <name> <pid>" and exits 0.
 * Flags: `exit=<code>` exits with <code> right after "up" (a crash loop when restarted);
 * `ignore-term` logs "term-ignored <name> <pid>" on SIGTERM and keeps running (a hung child).
 * Signals: SIGUSR1 exits 1 (a crash), SIGUSR2 exits 0 (a normal exit). No stdin is read.
 */
import { appendFileSync } from "node:fs";

const [name, logFile, ...flags] = process.argv.slice(2);
if (!name || !logFile) throw new Error("usage: child-fixture.ts <name> <logFile> [exit=<code>] [ignore-term]");
const log = (event: string) => appendFileSync(logFile, `${event} ${name} ${process.pid}\n`);

process.on("SIGTERM", () => {
  if (flags.includes("ignore-term")) return log("term-ignored");
  log("down");
  process.exit(0);
});
process.on("SIGUSR1", () => process.exit(1));
process.on("SIGUSR2", () => process.exit(0));

log("up");
console.log(`up ${process.pid}`);
const exit = flags.find((flag) => flag.startsWith("exit="));
if (exit) process.exit(Number(exit.slice("exit=".length)));
setInterval(() => {}, 1 << 30); // stay alive until told otherwise
