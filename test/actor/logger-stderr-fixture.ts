/**
 * Child process for logger.test.ts: logs once, prints "ready" and waits for a line on stdin
 * (the test fills the disk under its standard error meanwhile), logs 200 lines that cannot be
 * written, removes the filler file named by argv[2], logs "after" and prints "alive".
 */
import { rmSync } from "node:fs";
import { createLogger } from "../../mesh/logger.ts";

const filler = process.argv[2]!;
const flushed = () => new Promise((resolve) => process.stderr.write("", resolve));
const log = createLogger({ actor: "probe" });
log.info("first");
await flushed();
console.log("ready");
for await (const _ of Bun.stdin.stream()) break;
for (let i = 0; i < 200; i++) log.info("while full", { pad: "p".repeat(500) });
await flushed();
rmSync(filler);
log.info("after");
await flushed();
console.log("alive");
