/**
 * How an A2A message becomes a Hermes request, and how what comes back becomes A2A parts and
 * task states (the table in docs/interop.md). Works on the SDK's typed objects, whose parts
 * are oneofs (`part.content.$case`), never `part.text`: that is only the wire form.
 */
import { Role, TaskState, type Message, type Part } from "@a2a-js/sdk";
import type { Payload } from "../../mesh/envelope.ts";
import { ErrorCode, errorName, HermesError } from "../../mesh/errors.ts";
import { checkPayload } from "../../mesh/frames.ts";
import { newMessageId } from "../../mesh/ids.ts";
import { SKILL_KEY, textProperty, type Skill } from "./a2a-card.ts";
import { payloadFromJson, payloadToJson } from "./invoke-forms.ts";

/** What a task asks of the mesh: which capability, with what payload, for how long. */
export interface TaskInput {
  skill: string;
  payload: Payload;
  timeoutMs: number;
}

/** A task's deadline when the message sets none (`metadata.timeout_ms`), and the most it may set. */
export const DEFAULT_TIMEOUT_MS = 60_000;
export const MAX_TIMEOUT_MS = 60 * 60_000;

/**
 * The Hermes request a message asks for. The skill: `message.metadata.skill`, else the
 * request's `metadata.skill`, else `priorSkill` (a follow-up on a task), else the only skill
 * there is. The payload: the first data part (a JSON object), else the text parts joined by
 * newlines, in the skill's one required string property (see textProperty) or as `{ text }`.
 * Throws HermesError: code 4 for an unknown skill, code 2 for no skill named among several,
 * a part that cannot be a payload, or a bad `timeout_ms`; code 8 when the mesh has no skills.
 *
 * @example
 * taskInput(message("2+2"), undefined, skills); // { skill: "calculator", payload: { expression: "2+2" }, timeoutMs: 60000 }
 */
export function taskInput(message: Message, requestMetadata: Record<string, unknown> | undefined, skills: readonly Skill[], priorSkill?: string): TaskInput {
  const skill = pickSkill(message.metadata?.[SKILL_KEY] ?? requestMetadata?.[SKILL_KEY] ?? priorSkill, skills);
  return { skill: skill.id, payload: payloadOf(message.parts, skill), timeoutMs: timeoutOf(message.metadata?.timeout_ms ?? requestMetadata?.timeout_ms) };
}

function pickSkill(named: unknown, skills: readonly Skill[]): Skill {
  const known = skills.map((s) => s.id);
  if (named === undefined) {
    if (skills.length === 1) return skills[0]!;
    if (skills.length === 0) throw new HermesError(ErrorCode.UNROUTABLE, "the mesh has no actor capabilities: there is no skill to run", { target: "skill", known });
    throw new HermesError(ErrorCode.INVALID_REQUEST, `the message names no skill, and there are ${skills.length}: set message.metadata.${SKILL_KEY} to one of ${known.join(", ")}`, {
      reason: "no skill named", expected: `message.metadata.${SKILL_KEY}`, available_tools: known,
    });
  }
  const skill = typeof named === "string" ? skills.find((s) => s.id === named) : undefined;
  if (skill) return skill;
  const shown = typeof named === "string" ? `'${named}'` : JSON.stringify(named);
  throw new HermesError(ErrorCode.TOOL_NOT_FOUND, `unknown skill ${shown}: the skills are ${known.join(", ") || "(none)"}`, { requested_tool: named, available_tools: known });
}

function payloadOf(parts: readonly Part[], skill: Skill): Payload {
  const data = parts.find((p) => p.content?.$case === "data");
  if (data) {
    const value = data.content!.value as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, `the data part must hold a JSON object (the request payload), not ${Array.isArray(value) ? "a list" : value === null ? "null" : `a ${typeof value}`}`, {
        reason: "data part not an object", expected: "{ data: { ...payload } }",
      });
    }
    const payload = payloadFromJson(value, "data") as Payload;
    checkPayload(payload);
    return payload;
  }
  const texts = parts.flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : []));
  if (texts.length === 0) {
    const kinds = parts.map((p) => p.content?.$case ?? "empty");
    throw new HermesError(ErrorCode.INVALID_REQUEST, `the message needs a text or a data part${kinds.length ? `, it has ${kinds.join(", ")}` : ", it has none"}`, {
      reason: "no text or data part", expected: "parts: [{ text }] or [{ data: { ... } }]",
    });
  }
  return { [textProperty(skill.inputSchema) ?? "text"]: texts.join("\n") };
}

function timeoutOf(value: unknown): number {
  if (value === undefined) return DEFAULT_TIMEOUT_MS;
  if (typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_TIMEOUT_MS) return value;
  throw new HermesError(ErrorCode.INVALID_REQUEST, `metadata.timeout_ms must be an integer from 1 to ${MAX_TIMEOUT_MS}, not ${JSON.stringify(value)}`, {
    reason: "bad timeout_ms", expected: `1..${MAX_TIMEOUT_MS}`,
  });
}

/**
 * The state a Hermes error leaves a task in: 8 (no actor for the skill) REJECTED, 5 (credentials)
 * AUTH_REQUIRED, anything else FAILED. A cancel the client asked for is CANCELED, decided by the caller.
 *
 * @example
 * stateOfError(ErrorCode.UNROUTABLE); // TaskState.TASK_STATE_REJECTED
 */
export function stateOfError(code: number): TaskState {
  if (code === ErrorCode.UNROUTABLE) return TaskState.TASK_STATE_REJECTED;
  if (code === ErrorCode.AUTH_FAILED) return TaskState.TASK_STATE_AUTH_REQUIRED;
  return TaskState.TASK_STATE_FAILED;
}

/** A data part: the JSON form of a Hermes payload (binary as `$bin`, and so on: invoke-forms.ts). */
export function dataPart(payload: Payload): Part {
  return { content: { $case: "data", value: payloadToJson(payload) }, metadata: undefined, filename: "", mediaType: "application/json" };
}

/** A text part (typed: the wire form is `{ text }`). */
export function textPart(text: string): Part {
  return { content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" };
}

/**
 * The text of a simple result, for clients that show text: `result` when it is a string,
 * number or boolean, else `text` when a string, else the only field when it is one of those.
 *
 * @example
 * simpleText({ result: 4, expression: "2+2" }); // "4"
 * simpleText({ a: 1, b: 2 }); // undefined
 */
export function simpleText(payload: Payload): string | undefined {
  const scalar = (v: unknown) => (typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : undefined);
  const result = scalar(payload.result);
  if (result !== undefined) return result;
  if (typeof payload.text === "string") return payload.text;
  const keys = Object.keys(payload);
  return keys.length === 1 ? scalar(payload[keys[0]!]) : undefined;
}

/** A payload as parts: the data, and its text when it is a simple result. */
export function payloadParts(payload: Payload): Part[] {
  const text = simpleText(payload);
  return text === undefined ? [dataPart(payload)] : [dataPart(payload), textPart(text)];
}

/** A progress payload as parts: the data, and its `text` (or `message`) when it carries one. */
export function progressParts(payload: Payload): Part[] {
  const text = typeof payload.text === "string" ? payload.text : typeof payload.message === "string" ? payload.message : undefined;
  return text === undefined ? [dataPart(payload)] : [dataPart(payload), textPart(text)];
}

/** A Hermes error as parts: a text line with the code, and the whole error payload as data. */
export function errorParts(error: HermesError): Part[] {
  return [textPart(`${errorName(error.code)} (${error.code}): ${error.message}`), dataPart(error.toPayload())];
}

/**
 * A message from the agent (the gateway) on a task.
 *
 * @example
 * agentMessage(taskId, contextId, [textPart("done")]);
 */
export function agentMessage(taskId: string, contextId: string, parts: Part[], metadata?: Record<string, unknown>): Message {
  return { messageId: newMessageId(), contextId, taskId, role: Role.ROLE_AGENT, parts, metadata, extensions: [], referenceTaskIds: [] };
}
