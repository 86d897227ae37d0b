#!/usr/bin/env bun
import { existsSync } from "node:fs";
import { VERSION } from "../version.ts";

/** One subcommand: a line of help and a lazily loaded runner that parses its own arguments. */
interface Command {
  usage: string;
  summary: string;
  run: (argv: string[]) => Promise<number>;
}

const COMMANDS: Record<string, Command> = {
  up: {
    usage: "up <mesh.yaml> [--dir D]",
    summary: "start a mesh's supervisor tree in the foreground (Ctrl-C stops it)",
    run: async (argv) => (await import("./up.ts")).runUpCommand(argv),
  },
  ps: {
    usage: "ps [--dir D] [--json]",
    summary: "show a running mesh's actors: pids, health, restarts, queue depth",
    run: async (argv) => (await import("./ps.ts")).runPsCommand(argv),
  },
  actor: {
    usage: "actor <module> [--dir D] [--name N]",
    summary: "run one actor outside the supervisor tree as a member of a running mesh (another container, its own restarts)",
    run: async (argv) => (await import("./actor.ts")).runActorCommand(argv),
  },
  send: {
    usage: "send <target> '<json>'|@file|- [--dir D]",
    summary: "send a request into a running mesh and print the answer",
    run: async (argv) => (await import("./send.ts")).runSendCommand(argv),
  },
  mcp: {
    usage: "mcp [--dir D]",
    summary: "serve a running mesh's tools to an MCP client (an IDE) over stdio",
    run: async (argv) => (await import("./mcp.ts")).runMcpCommand(argv),
  },
  run: {
    usage: "run <workflow.yaml> '<json input>' [--dir D]",
    summary: "run a workflow on a running mesh, streaming its progress (--cancel <run_id>, --validate)",
    run: async (argv) => (await import("./run.ts")).runRunCommand(argv),
  },
  runs: {
    usage: "runs [run_id] [--dir D]",
    summary: "list workflow runs with their status (or one run's nodes and history)",
    run: async (argv) => (await import("./runs.ts")).runRunsCommand(argv),
  },
  demo: {
    usage: "demo [--seconds N]",
    summary: "a scripted tour: starts the example mesh, kills an actor under load (nothing lost), measures latency, stops",
    run: async (argv) => (await import("./demo.ts")).runDemoCommand(argv),
  },
  trace: {
    usage: "trace <trace_id> [--dir D]",
    summary: "rebuild one flow across actors as a tree with timings",
    run: async (argv) => (await import("./trace.ts")).runTraceCommand(argv),
  },
  events: {
    usage: "events [member] [--dir D] [--follow]",
    summary: "print event logs as JSON Lines (each handled or sent message's record too), or follow them",
    run: async (argv) => (await import("./events.ts")).runEventsCommand(argv),
  },
  bench: {
    usage: "bench [scenario...] [--quick] [--json out.json] [--duration s]",
    summary: "run benchmarks against the raw socket (see docs/benchmarks.md)",
    run: runBench,
  },
};

/**
 * The benchmark harness, bench/ (shipped in the package), loaded only for this command. Should
 * it be missing all the same (a trimmed install), say so instead of a module-not-found trace.
 */
async function runBench(argv: string[]): Promise<number> {
  if (!existsSync(new URL("../../bench/cli.ts", import.meta.url))) {
    console.error("hermes-mesh bench: the benchmark harness (bench/) is missing from this installation; reinstall the\npackage (npm install hermes-mesh), or run it from a clone of the repository: npm ci && npx hermes-mesh bench --quick");
    return 2;
  }
  const { runBenchCommand } = await import("../../bench/cli.ts");
  return runBenchCommand(argv);
}

function help(): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length));
  const lines = Object.values(COMMANDS).map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`);
  return `hermes-mesh ${VERSION}: a Bun-native actor runtime for multi-agent systems

Usage: hermes-mesh <command> [options]     (hermes-mesh <command> --help for its options)

Commands:
${lines.join("\n")}
  help | --help | -h
  version | --version | -v
`;
}

/** Entry point of the `hermes-mesh` command. Returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    console.log(help());
    return 0;
  }
  if (command === "version" || command === "--version" || command === "-v") {
    console.log(VERSION);
    return 0;
  }
  const entry = COMMANDS[command];
  if (!entry) {
    console.error(`hermes-mesh: unknown command '${command}'\n\n${help()}`);
    return 2;
  }
  try {
    return await entry.run(rest);
  } catch (error) {
    // Bad arguments and operational failures get one clear line, not a stack trace.
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS")) {
      console.error(`hermes-mesh ${command}: ${(error as Error).message}\nUsage: hermes-mesh ${entry.usage}`);
      return 2;
    }
    const prefix = typeof code === "number" ? `error ${code}: ` : "";
    console.error(`hermes-mesh ${command}: ${prefix}${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

if (import.meta.main) process.exit(await main(process.argv.slice(2)));
