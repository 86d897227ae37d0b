/**
 * A ChatModel that plays a script: offline tests and the demo run the real agent loop against
 * it, deterministically, with no endpoint and no key.
 */
import { ErrorCode, isErrorCode, HermesError } from "../../mesh/errors.ts";
import type { ChatMessage, ChatModel, ChatRequest, ChatResponse, ToolCall } from "./chat-types.ts";

/** A tool call in a script. `arguments` as an object is sent as its JSON; as a string it is sent as is, valid JSON or not. */
export interface ScriptToolCall {
  name: string;
  arguments?: Record<string, unknown> | unknown[] | string;
  id?: string;
}

/** What one turn answers: a reply text, or a map with `reply`, `tool_calls` (both may come together) or `error` (thrown as a HermesError). */
export type ScriptReply =
  | string
  | { reply?: string | null; tool_calls?: ScriptToolCall[]; error?: { code: number; message: string }; finish_reason?: string };

/** One turn: a reply, or a function of the request for answers that depend on the conversation. */
export type ScriptTurn = ScriptReply | ((request: ChatRequest, at: { track: string; turn: number }) => ScriptReply | Promise<ScriptReply>);

/** A sequence of turns and the requests it answers: all selectors given must match; none given matches everything. */
export interface ScriptTrack {
  /** Named in errors. Default the agent, else the model, else the match as a regex, else "track N". */
  name?: string;
  /** Matches `request.agent`. */
  agent?: string;
  /** Matches `request.model`. */
  model?: string;
  /** Matches the last user message: a RegExp, a string read as a case-insensitive RegExp, or a predicate. */
  match?: RegExp | string | ((lastUserMessage: string, request: ChatRequest) => boolean);
  turns: ScriptTurn[];
}

/** A whole script. */
export interface ScriptedModelOptions {
  /** The model's name, in errors. Default "scripted". */
  name?: string;
  /** Tried in order; the first that matches answers. */
  tracks: ScriptTrack[];
  /** "shared" (default): one position per track. "trace": one per track and trace_id, so concurrent tasks each play the track from its start. */
  cursor?: "shared" | "trace";
  /**
   * The `notice` every response carries, saying that it is scripted. Default a generic one
   * ("scripted reply (scripted model '<name>'): ..."); the agent actor passes one that says
   * how to use a real model (scriptedProviderNotice in agent-config.ts).
   */
  notice?: string;
}

/** The default notice of a scripted model's responses. */
function scriptedNotice(name: string): string {
  return `scripted reply (scripted model '${name}'): played from a script whatever was asked, not a model's answer to this request`;
}

const MAX_CURSORS = 10_000;
const MAX_RECORDED = 1000;
const tokens = (chars: number) => Math.ceil(chars / 4);

/**
 * Answers each request with the next turn of the first track that matches it, and reports
 * usage of about one token per four characters. When a track has no turn left it throws
 * HermesError code 7 (INTERNAL) naming the model, the track and the turn: it never repeats
 * or invents an answer. Every response says what it is: `model: "scripted"` and a `notice`
 * (ScriptedModelOptions.notice), so a scripted answer is never taken for a real one.
 *
 * @example
 * const model = new ScriptedModel([
 *   { tool_calls: [{ name: "calculator", arguments: { expression: "6*7" } }] },
 *   "It is 42.",
 * ]);
 * (await model.complete({ model: "any", messages })).message.tool_calls?.[0].arguments; // '{"expression":"6*7"}'
 */
export class ScriptedModel implements ChatModel {
  readonly name: string;
  /** The requests answered, oldest first (the last 1,000), for tests to inspect. */
  readonly requests: ChatRequest[] = [];
  #tracks: Array<ScriptTrack & { name: string }>;
  #perTrace: boolean;
  #notice: string;
  #cursors = new Map<string, number>();

  constructor(script: ScriptTurn[] | ScriptedModelOptions) {
    const options: ScriptedModelOptions = Array.isArray(script) ? { tracks: [{ turns: script }] } : script;
    this.name = options.name ?? "scripted";
    this.#notice = options.notice ?? scriptedNotice(this.name);
    this.#perTrace = options.cursor === "trace";
    this.#tracks = options.tracks.map((track, i) => ({ ...track, name: track.name ?? track.agent ?? track.model ?? matchName(track.match) ?? `track ${i + 1}` }));
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    if (request.signal?.aborted) throw HermesError.from(request.signal.reason, ErrorCode.TASK_TIMEOUT);
    const lastUser = request.messages.findLast((m) => m.role === "user")?.content ?? "";
    const index = this.#tracks.findIndex((track) => matches(track, lastUser, request));
    const track = this.#tracks[index];
    if (!track) {
      throw this.#fail(`no track matches this request (agent ${request.agent ?? "-"}, model ${request.model})`, lastUser, {
        reason: "no track matches",
        known: this.#tracks.map((t) => t.name),
      });
    }
    const key = this.#perTrace ? `${index}\u0000${request.trace_id ?? ""}` : `${index}`;
    const turn = (this.#cursors.get(key) ?? 0) + 1;
    this.#cursors.delete(key); // re-inserted last: the oldest cursor is the first to go
    this.#cursors.set(key, turn);
    if (this.#cursors.size > MAX_CURSORS) this.#cursors.delete(this.#cursors.keys().next().value!);
    this.requests.push(request);
    if (this.requests.length > MAX_RECORDED) this.requests.shift();
    const at = { track: track.name, turn };
    const step = track.turns[turn - 1];
    if (step === undefined) {
      throw this.#fail(`track '${track.name}' has ${track.turns.length} turns and turn ${turn} was asked for`, lastUser, {
        reason: "script exhausted",
        ...at,
        turns: track.turns.length,
      });
    }
    let reply: ScriptReply;
    try {
      reply = typeof step === "function" ? await step(request, at) : step;
    } catch (error) {
      if (error instanceof HermesError) throw error;
      throw this.#fail(`turn ${turn} of track '${track.name}' threw: ${(error as Error)?.message ?? error}`, lastUser, { reason: "script turn threw", ...at }, error);
    }
    return this.#respond(reply, request, at);
  }

  /**
   * What was left unplayed, one line per track (and trace) with turns left; empty when every
   * track that could be played to its end was.
   *
   * @example
   * expect(model.unused()).toEqual([]);
   */
  unused(): string[] {
    const left: string[] = [];
    this.#tracks.forEach((track, index) => {
      const keys = [...this.#cursors.keys()].filter((k) => k === `${index}` || k.startsWith(`${index}\u0000`));
      if (keys.length === 0 && !this.#perTrace) keys.push(`${index}`);
      for (const key of keys) {
        const played = this.#cursors.get(key) ?? 0;
        const trace = key.split("\u0000")[1];
        if (played < track.turns.length) left.push(`track '${track.name}'${trace ? ` (trace ${trace})` : ""}: ${track.turns.length - played} of ${track.turns.length} turns unplayed`);
      }
    });
    return left;
  }

  #respond(reply: ScriptReply, request: ChatRequest, at: { track: string; turn: number }): ChatResponse {
    const turn = typeof reply === "string" ? { reply } : reply;
    if (turn.error) {
      const code = isErrorCode(turn.error.code) ? turn.error.code : ErrorCode.UNKNOWN;
      throw new HermesError(code, turn.error.message, { model: this.name, ...at });
    }
    const message: ChatMessage = { role: "assistant", content: turn.reply ?? null };
    const slug = at.track.replace(/[^A-Za-z0-9_-]+/g, "_");
    const calls = (turn.tool_calls ?? []).map((call, i): ToolCall => ({
      id: call.id ?? `call_${slug}_${at.turn}_${i + 1}`,
      name: call.name,
      arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {}),
    }));
    if (calls.length > 0) message.tool_calls = calls;
    const prompt = tokens(JSON.stringify(request.messages).length + (request.tools ? JSON.stringify(request.tools).length : 0));
    const completion = tokens((message.content ?? "").length + calls.reduce((n, c) => n + c.name.length + c.arguments.length, 0));
    return {
      message,
      // Not request.model: the answer did not come from that model (nor is it priced as one).
      model: "scripted",
      finish_reason: turn.finish_reason ?? (calls.length > 0 ? "tool_calls" : "stop"),
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
      notice: this.#notice,
    };
  }

  #fail(what: string, lastUser: string, fields: Record<string, unknown>, cause?: unknown): HermesError {
    const quoted = lastUser.length > 80 ? `${lastUser.slice(0, 77)}...` : lastUser;
    const detail = `scripted model '${this.name}': ${what} (last user message: ${JSON.stringify(quoted)})`;
    return new HermesError(ErrorCode.INTERNAL, detail, { model: this.name, ...fields }, { cause });
  }
}

function matchName(match: ScriptTrack["match"]): string | undefined {
  if (typeof match === "string") return `/${match}/i`;
  return match instanceof RegExp ? String(match) : undefined;
}

function matches(track: ScriptTrack, lastUser: string, request: ChatRequest): boolean {
  if (track.agent !== undefined && track.agent !== request.agent) return false;
  if (track.model !== undefined && track.model !== request.model) return false;
  const { match } = track;
  if (match === undefined) return true;
  if (typeof match === "function") return match(lastUser, request);
  // search(), unlike test(), ignores a /g regex's lastIndex: the same message always matches the same way.
  return lastUser.search(typeof match === "string" ? new RegExp(match, "i") : match) >= 0;
}
