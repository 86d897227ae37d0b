/**
 * Scripts for the ScriptedModel as JSON or YAML files, validated before anything runs so a
 * typo in a demo script is reported with its line, not discovered at turn 7.
 */
import { readFileSync } from "node:fs";
import { LineCounter, parseDocument, type Document } from "yaml";
import { z } from "zod";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { ScriptedModelOptions } from "./scripted-model.ts";

const text = (what: string) => z.string({ error: `expected ${what}` });
const Regex = text("a regular expression").refine((source) => {
  try {
    new RegExp(source, "i");
    return true;
  } catch {
    return false;
  }
}, "expected a valid regular expression");

const CODE = { error: "expected an error code from 1 to 11" };
// A map's own message for "not a map", and the keys it knows for a key it does not.
const mapOf = <S extends z.core.$ZodLooseShape>(shape: S, what: string) =>
  z.strictObject(shape, {
    error: (issue) => issue.code === "unrecognized_keys"
      ? `unknown key ${issue.keys.join(", ")} (expected one of: ${Object.keys(shape).join(", ")})`
      : `expected ${what}`,
  });

const ToolCallSchema = mapOf({
  name: text("a tool name").min(1, "expected a tool name"),
  // A string is sent as is: scripts feed malformed arguments on purpose.
  arguments: z.union([z.string(), z.record(z.string(), z.unknown()), z.array(z.unknown())], {
    error: "expected a map, a list or a JSON text",
  }).optional(),
  id: text("a call id").optional(),
}, "a map with name and arguments");

const TurnSchema = z.preprocess(
  (turn) => (typeof turn === "string" ? { reply: turn } : turn),
  mapOf({
    reply: text("a reply text").nullable().optional(),
    tool_calls: z.array(ToolCallSchema, { error: "expected a list of tool calls" }).min(1, "expected at least one tool call").optional(),
    error: mapOf({ code: z.int(CODE).min(1, CODE).max(11, CODE), message: text("an error message") }, "a map with code and message").optional(),
    finish_reason: text("a finish reason").optional(),
  }, "a reply text or a map with reply, tool_calls or error"),
).refine((turn) => turn.reply != null || turn.tool_calls || turn.error, "a turn needs reply, tool_calls or error");

const Turns = z.array(TurnSchema, { error: "expected a list of turns" }).min(1, "expected at least one turn");

const TrackSchema = mapOf({
  name: text("a track name").optional(),
  agent: text("an agent name").optional(),
  model: text("a model name").optional(),
  match: Regex.optional(),
  turns: Turns,
}, "a map with turns");

/**
 * The schema of a script file: `tracks` (each with optional `agent`, `model`, `match` (a
 * case-insensitive regular expression on the last user message) and its `turns`), or `turns`
 * alone for a single track, or just a list of turns. A turn is a reply text or a map with
 * `reply`, `tool_calls` ({ name, arguments as a map or as raw JSON text, id }) or `error`
 * ({ code, message }).
 */
export const ScriptFileSchema = z.preprocess(
  (file) => (Array.isArray(file) ? { turns: file } : file),
  mapOf({
    name: text("a model name").optional(),
    cursor: z.enum(["shared", "trace"], { error: "expected shared or trace" }).optional(),
    tracks: z.array(TrackSchema, { error: "expected a list of tracks" }).min(1, "expected at least one track").optional(),
    turns: Turns.optional(),
  }, "a map with tracks or turns, or a list of turns"),
).refine((file) => (file.tracks === undefined) !== (file.turns === undefined), "expected either tracks or turns, not both or neither");

/**
 * Reads a script from a .json, .yaml or .yml file (JSON is read as YAML, which it is).
 * Anything wrong throws HermesError code 2 naming the file, the line and the field.
 *
 * @example
 * const model = new ScriptedModel(loadScript("actors/demo-script.yaml"));
 */
export function loadScript(path: string): ScriptedModelOptions {
  let source: string;
  try {
    source = readFileSync(path, "utf8");
  } catch (error) {
    throw new HermesError(ErrorCode.INVALID_REQUEST, `script file ${path}: cannot be read (${(error as Error).message})`, {
      reason: "unreadable script file",
    }, { cause: error });
  }
  return parseScript(source, path);
}

/**
 * Parses and validates script text; `fileName` only labels errors.
 *
 * @example
 * parseScript("turns:\n  - Hello!\n", "inline").tracks[0].turns; // [{ reply: "Hello!" }]
 */
export function parseScript(source: string, fileName: string): ScriptedModelOptions {
  const lines = new LineCounter();
  const doc = parseDocument(source, { lineCounter: lines, prettyErrors: false });
  const problems: string[] = doc.errors.map((e) => `${fileName}:${e.linePos?.[0].line ?? 1}: ${e.message.split("\n")[0]}`);
  if (problems.length === 0) {
    const parsed = ScriptFileSchema.safeParse(doc.toJS());
    if (parsed.success) {
      const { name, cursor, tracks, turns } = parsed.data;
      return { ...(name && { name }), ...(cursor && { cursor }), tracks: tracks ?? [{ turns: turns! }] };
    }
    const seen = new Set<string>();
    for (const issue of parsed.error.issues) {
      // One finding per place: a map with an unknown key also fails the checks on its known keys.
      const place = issue.path.join("\u0000");
      if (seen.has(place)) continue;
      seen.add(place);
      const line = lines.linePos(startOf(doc, issue.path as Array<string | number>)).line;
      const at = issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "");
      problems.push(`${fileName}:${line}: ${at ? `${at}: ` : ""}${issue.message}`);
    }
  }
  throw new HermesError(ErrorCode.INVALID_REQUEST, `bad script file ${fileName}:\n${problems.join("\n")}`, {
    reason: problems[0],
    expected: "a script: tracks or turns (see ScriptFileSchema)",
    issues: problems,
  });
}

/** Where the node at `path` starts, or its nearest ancestor that exists (a missing key is reported at its map). */
function startOf(doc: Document, path: Array<string | number>): number {
  for (let depth = path.length; depth >= 0; depth--) {
    const node = doc.getIn(path.slice(0, depth), true) as { range?: [number] } | undefined;
    if (node?.range) return node.range[0];
  }
  return 0;
}
