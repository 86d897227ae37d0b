import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { spansPathOf, type LogEvent } from "../observability/event-log.ts";
import { EventLogTail } from "../observability/event-log-reader.ts";
import { resolveMeshDir } from "./mesh-access.ts";

const USAGE = `Usage: hermes-mesh events [member] [--dir D] [--follow]

Prints a mesh's event logs as JSON Lines, oldest first: each member's <dir>/logs/<member>.jsonl
(starts, stops, errors, tool calls) and the binary records of every message it handled or sent
beside it (<member>.spans), each as the JSON line it stands for. Without a member, every
member's, rotated files (.1.jsonl, .1.spans) included. A member is named by its address
(echo#0), its file name (echo.0) or a path.

  --follow, -f   keep printing what is written, as tail -f does, across rotations (Ctrl-C ends it)`;

const POLL_MS = 250;

/** `hermes-mesh events`: exit 0, or 1 when the member (or the mesh's logs) cannot be found. */
export async function runEventsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { dir: { type: "string" }, follow: { type: "boolean", short: "f" }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length > 1) {
    console.error(`hermes-mesh events: expected at most one member\n${USAGE}`);
    return 2;
  }
  const logs = positionals[0]?.includes("/") ? undefined : join(resolveMeshDir(values.dir), "logs");
  const paths = logPaths(logs, positionals[0]);
  if (paths.length === 0) {
    console.error(`hermes-mesh events: no event log ${positionals[0] ? `of ${positionals[0]} ` : ""}in ${logs ?? positionals[0]}`);
    return 1;
  }
  const tails = paths.map((path) => new EventLogTail(path));
  const print = (events: LogEvent[]) => {
    events.sort((a, b) => Number(a.ts) - Number(b.ts));
    if (events.length > 0) process.stdout.write(`${events.map((e) => JSON.stringify(e)).join("\n")}\n`);
  };
  print(tails.flatMap((tail) => tail.read()));
  if (!values.follow) return 0;
  // A rotated file gets nothing new: its current file's tail reads what it was given before it was renamed.
  const followed = tails.filter((tail) => !isRotated(tail.path));
  const { promise, resolve } = Promise.withResolvers<number>();
  const timer = setInterval(() => print(followed.flatMap((tail) => tail.read())), POLL_MS);
  const stop = () => {
    clearInterval(timer);
    resolve(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return promise;
}

/** True for `echo.1.jsonl` when `echo.jsonl` (or `echo.spans`) is there too: echo's previous file, not echo#1's. */
function isRotated(path: string): boolean {
  const current = path.replace(/\.\d+\.jsonl$/, ".jsonl");
  return current !== path && (existsSync(current) || existsSync(spansPathOf(current)));
}

/** The JSON Lines files to read (each with its span file): one member's, or every one of the directory. */
function logPaths(logs: string | undefined, member: string | undefined): string[] {
  if (logs === undefined) return [member!.replace(/\.spans$/, ".jsonl")];
  if (member !== undefined) {
    const path = join(logs, `${member.replace("#", ".").replace(/\.(jsonl|spans)$/, "")}.jsonl`);
    return existsSync(path) || existsSync(spansPathOf(path)) ? [path] : [];
  }
  if (!existsSync(logs)) return [];
  // Rotated files too: `echo.1.jsonl` may be echo's previous file or the current one of echo#1.
  const names = new Set(readdirSync(logs).filter((name) => /\.(jsonl|spans)$/.test(name)).map((name) => name.replace(/\.(jsonl|spans)$/, ".jsonl")));
  return [...names].sort().map((name) => join(logs, name));
}
