#!/usr/bin/env bun
import { parseArgs } from "node:util";
import { VERSION } from "../version.ts";

const HELP = `hermes-mesh ${VERSION}: a Bun-native actor runtime for multi-agent systems

Usage: hermes-mesh <command> [options]

Commands:
  demo [--seconds N]    start an echo peer process and talk to it over a Unix socket
  bench [scenario...]   run benchmarks (see docs/benchmarks.md)
  help                  show this help
  version               print the version

Options:
  -h, --help            show this help
  -v, --version         print the version
`;

/** Entry point of the `hermes-mesh` command. Returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { help: { type: "boolean", short: "h" }, version: { type: "boolean", short: "v" } },
    allowPositionals: true,
    strict: false,
  });
  const command = positionals[0];
  if (values.version || command === "version") {
    console.log(VERSION);
    return 0;
  }
  if (values.help || command === undefined || command === "help") {
    console.log(HELP);
    return 0;
  }
  if (command === "demo") {
    const { runDemo } = await import("./demo.ts");
    const seconds = Number(argv[argv.indexOf("--seconds") + 1]);
    return runDemo(argv.includes("--seconds") && seconds > 0 ? seconds : 2);
  }
  if (command === "bench") {
    const { runBenchCommand } = await import("../../bench/cli.ts");
    return runBenchCommand(argv.slice(1));
  }
  console.error(`hermes-mesh: unknown command '${command}'\n\n${HELP}`);
  return 2;
}

if (import.meta.main) process.exit(await main(process.argv.slice(2)));
