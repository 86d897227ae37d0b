/** How A2A messages become Hermes requests, and Hermes answers A2A parts and states (src/gateway/a2a-mapping.ts). */
import { describe, expect, test } from "bun:test";
import { Role, TaskState, type Message, type Part } from "@a2a-js/sdk";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import type { Skill } from "../../src/gateway/a2a-card.ts";
import { DEFAULT_TIMEOUT_MS, errorParts, payloadParts, progressParts, simpleText, stateOfError, taskInput } from "../../src/gateway/a2a-mapping.ts";

const CALCULATOR: Skill = { id: "calculator", actors: ["calculator"], inputSchema: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] } };
const ECHO: Skill = { id: "echo", actors: ["echo"], inputSchema: { type: "object", properties: { progress: { type: "integer" } } } };
const text = (value: string): Part => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });
const data = (value: unknown): Part => ({ content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "" });
const message = (parts: Part[], metadata?: Record<string, unknown>): Message => ({ messageId: "m", contextId: "", taskId: "", role: Role.ROLE_USER, parts, metadata, extensions: [], referenceTaskIds: [] });
const refusal = (fn: () => unknown): HermesError => {
  try {
    fn();
  } catch (error) {
    if (error instanceof HermesError) return error;
    throw error;
  }
  throw new Error("it did not throw");
};

describe("taskInput", () => {
  test("text goes into the skill's one required string property, else into { text }; several text parts are joined", () => {
    expect(taskInput(message([text("2+2")], { skill: "calculator" }), undefined, [CALCULATOR, ECHO])).toEqual({ skill: "calculator", payload: { expression: "2+2" }, timeoutMs: DEFAULT_TIMEOUT_MS });
    expect(taskInput(message([text("hi"), text("there")], { skill: "echo" }), undefined, [CALCULATOR, ECHO]).payload).toEqual({ text: "hi\nthere" });
  });

  test("a data part is the payload, before any text; its JSON forms are decoded", () => {
    const input = taskInput(message([text("ignored"), data({ progress: 2, blob: { $bin: "AQI=" } })], { skill: "echo" }), undefined, [CALCULATOR, ECHO]);
    expect(input.payload).toEqual({ progress: 2, blob: new Uint8Array([1, 2]) });
  });

  test("the skill: message metadata, else the request's, else the task's earlier one, else the only skill", () => {
    expect(taskInput(message([text("x")]), { skill: "echo" }, [CALCULATOR, ECHO]).skill).toBe("echo");
    expect(taskInput(message([text("x")]), undefined, [CALCULATOR, ECHO], "calculator").skill).toBe("calculator");
    expect(taskInput(message([text("1+1")]), undefined, [CALCULATOR]).skill).toBe("calculator");
  });

  test("an unknown skill is code 4 listing the skills; none named among several code 2; no skills at all code 8", () => {
    const unknown = refusal(() => taskInput(message([text("x")], { skill: "ocr" }), undefined, [CALCULATOR, ECHO]));
    expect(unknown.code).toBe(ErrorCode.TOOL_NOT_FOUND);
    expect(unknown.message).toBe("unknown skill 'ocr': the skills are calculator, echo");
    expect(unknown.fields.available_tools).toEqual(["calculator", "echo"]);
    const unnamed = refusal(() => taskInput(message([text("x")]), undefined, [CALCULATOR, ECHO]));
    expect(unnamed.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(unnamed.message).toContain("set message.metadata.skill to one of calculator, echo");
    expect(refusal(() => taskInput(message([text("x")]), undefined, [])).code).toBe(ErrorCode.UNROUTABLE);
    expect(refusal(() => taskInput(message([text("x")], { skill: 7 }), undefined, [ECHO])).message).toContain("unknown skill 7");
  });

  test("parts that cannot be a payload, and bad deadlines, are code 2 saying why", () => {
    expect(refusal(() => taskInput(message([data([1, 2])]), undefined, [ECHO])).message).toContain("must hold a JSON object");
    expect(refusal(() => taskInput(message([{ content: { $case: "url", value: "http://x" }, metadata: undefined, filename: "", mediaType: "" }]), undefined, [ECHO])).message).toContain("it has url");
    expect(refusal(() => taskInput(message([]), undefined, [ECHO])).message).toContain("it has none");
    expect(refusal(() => taskInput(message([text("x")], { timeout_ms: -1 }), undefined, [ECHO])).message).toContain("timeout_ms");
    expect(taskInput(message([text("x")], { timeout_ms: 2500 }), undefined, [ECHO]).timeoutMs).toBe(2500);
  });
});

describe("answers, progress and errors as parts and states", () => {
  test("a simple result also has a text part; other payloads are data only", () => {
    expect(simpleText({ result: 4, expression: "2+2" })).toBe("4");
    expect(simpleText({ text: "hello" })).toBe("hello");
    expect(simpleText({ ok: true })).toBe("true");
    expect(simpleText({ a: 1, b: 2 })).toBeUndefined();
    expect(payloadParts({ result: 4 }).map((p) => p.content?.$case)).toEqual(["data", "text"]);
    expect(payloadParts({ a: 1, b: 2 }).map((p) => p.content?.$case)).toEqual(["data"]);
    expect(progressParts({ step: 1 }).map((p) => p.content?.$case)).toEqual(["data"]);
    expect(progressParts({ step: 1, text: "reading" }).map((p) => p.content?.$case)).toEqual(["data", "text"]);
  });

  test("binary in an answer goes out in its JSON form", () => {
    expect(payloadParts({ blob: new Uint8Array([1, 2]), n: 1 })[0]!.content).toEqual({ $case: "data", value: { blob: { $bin: "AQI=" }, n: 1 } });
  });

  test("code 8 REJECTED, code 5 AUTH_REQUIRED, any other FAILED; the error keeps its code and detail", () => {
    expect(stateOfError(ErrorCode.UNROUTABLE)).toBe(TaskState.TASK_STATE_REJECTED);
    expect(stateOfError(ErrorCode.AUTH_FAILED)).toBe(TaskState.TASK_STATE_AUTH_REQUIRED);
    for (const code of [ErrorCode.INVALID_REQUEST, ErrorCode.TASK_TIMEOUT, ErrorCode.TOOL_NOT_FOUND, ErrorCode.INTERNAL, ErrorCode.UNAVAILABLE]) expect(stateOfError(code)).toBe(TaskState.TASK_STATE_FAILED);
    const parts = errorParts(new HermesError(ErrorCode.TASK_TIMEOUT, "too slow", { timeout_ms: 5 }));
    expect(parts[0]!.content).toEqual({ $case: "text", value: "TASK_TIMEOUT (3): too slow" });
    expect(parts[1]!.content).toEqual({ $case: "data", value: { timeout_ms: 5, error_code: 3, error_name: "TASK_TIMEOUT", detail: "too slow" } });
  });
});
