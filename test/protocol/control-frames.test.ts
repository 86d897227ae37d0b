import { describe, expect, test } from "bun:test";
import { AckSchema, ControlFrameSchema, HelloSchema, isControlType, PingSchema, PongSchema, PROTOCOL_VERSION } from "../../mesh/handshake.ts";
import { CodecName } from "../../mesh/codecs.ts";

const hello = { message_type: "hello" as const, protocol: 1, node: "worker", codecs: ["msgpack"], window: 1024 };

describe("HelloSchema", () => {
  test("accepts a hello, with or without a token, keeping extra fields", () => {
    expect(HelloSchema.parse(hello)).toEqual(hello);
    expect(HelloSchema.parse({ ...hello, token: "t", x: 1 })).toEqual({ ...hello, token: "t", x: 1 });
  });

  test("requires msgpack among the codecs", () => {
    expect(HelloSchema.safeParse({ ...hello, codecs: ["msgpackr-records"] }).success).toBe(false);
    expect(HelloSchema.safeParse({ ...hello, codecs: [] }).success).toBe(false);
    expect(HelloSchema.safeParse({ ...hello, codecs: ["msgpackr-records", "msgpack"] }).success).toBe(true);
  });

  test("bounds node, window and protocol", () => {
    for (const bad of [{ node: "" }, { window: 0 }, { window: 1_000_001 }, { window: 1.5 }, { protocol: 0 }, { token: 5 }]) {
      expect(HelloSchema.safeParse({ ...hello, ...bad }).success).toBe(false);
    }
    // A later version is well-formed; refusing it is the connection's job (code 2, PROTOCOL_VERSION 1).
    expect(HelloSchema.safeParse({ ...hello, protocol: 2 }).success).toBe(true);
    expect(PROTOCOL_VERSION).toBe(1);
  });
});

describe("ack, ping, pong", () => {
  test("ack needs an integer seq from 0", () => {
    expect(AckSchema.safeParse({ message_type: "ack", seq: 7 }).success).toBe(true);
    for (const seq of ["7", -1, 1.5, undefined]) expect(AckSchema.safeParse({ message_type: "ack", seq }).success).toBe(false);
  });

  test("ping and pong carry an optional integer nonce", () => {
    for (const schema of [PingSchema, PongSchema]) {
      const type = schema === PingSchema ? "ping" : "pong";
      expect(schema.safeParse({ message_type: type }).success).toBe(true);
      expect(schema.safeParse({ message_type: type, nonce: 3 }).success).toBe(true);
      expect(schema.safeParse({ message_type: type, nonce: "3" }).success).toBe(false);
    }
  });

  test("ControlFrameSchema picks the schema by message_type", () => {
    expect(ControlFrameSchema.parse({ message_type: "ack", seq: 1 })).toEqual({ message_type: "ack", seq: 1 });
    expect(ControlFrameSchema.safeParse({ message_type: "request" }).success).toBe(false);
  });

  test("isControlType knows the four control types only", () => {
    for (const type of ["hello", "ack", "ping", "pong"]) expect(isControlType(type)).toBe(true);
    for (const type of ["request", "error", undefined, 1]) expect(isControlType(type)).toBe(false);
  });

  test("codec names", () => {
    expect(CodecName).toEqual({ MSGPACK: "msgpack", MSGPACKR_RECORDS: "msgpackr-records", HERMES_ENVELOPE: "hermes-envelope" });
  });
});
