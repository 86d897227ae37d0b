import { expect, test } from "bun:test";
import { ControlType, CORRELATED_TYPES, ENVELOPE_TYPES, HttpMsgType, MessageType } from "../../mesh/envelope.ts";

test("the six envelope types of docs/protocol.md §3", () => {
  expect([...ENVELOPE_TYPES].sort()).toEqual(["cancel", "error", "event", "progress", "request", "response"]);
  expect(Object.values(MessageType)).toEqual(ENVELOPE_TYPES as never);
});

test("the four control types of section 5", () => {
  expect(Object.values(ControlType)).toEqual(["hello", "ack", "ping", "pong"]);
});

test("correlated types are those that answer or cancel a request", () => {
  expect([...CORRELATED_TYPES].sort()).toEqual(["cancel", "error", "progress", "response"]);
});

test("HTTP msg_type numbers of section 7", () => {
  expect(HttpMsgType).toEqual({ TASK_REQUEST: 1, TASK_RESULT: 2, TASK_PROGRESS: 3, TASK_ERROR: 4, EVENT: 5, HEARTBEAT: 6 });
});
