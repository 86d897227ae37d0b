import { describe, expect, test } from "bun:test";
import { createPlainCodec } from "../../mesh/codecs.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

describe("HermesError", () => {
  const error = new HermesError(ErrorCode.UNROUTABLE, "no actor named 'ocr'", { target: "ocr", known: ["echo"] });

  test("is an Error with the protocol code and name", () => {
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("HermesError");
    expect(error.code).toBe(8);
    expect(error.codeName).toBe("UNROUTABLE");
    expect(error.message).toBe("no actor named 'ocr'");
  });

  test("toPayload carries code, name, detail and the actionable fields, never a stack", () => {
    const payload = error.toPayload();
    expect(payload).toEqual({ error_code: 8, error_name: "UNROUTABLE", detail: "no actor named 'ocr'", target: "ocr", known: ["echo"] });
    expect(JSON.stringify(payload)).not.toContain("at ");
    expect("stack" in payload).toBe(false);
  });

  test("fields cannot overwrite the code, name or detail", () => {
    const sneaky = new HermesError(ErrorCode.TTL_EXPIRED, "late", { error_code: 0, error_name: "SUCCESS", detail: "fine" });
    expect(sneaky.toPayload()).toMatchObject({ error_code: 9, error_name: "TTL_EXPIRED", detail: "late" });
  });

  test("fromWire(toPayload()) round-trips, also through MessagePack and from a whole envelope", () => {
    const codec = createPlainCodec();
    const wirePayload = codec.decode(codec.encode(error.toPayload()));
    for (const wire of [error.toPayload(), wirePayload, { message_type: "error", payload: wirePayload }]) {
      const back = HermesError.fromWire(wire);
      expect(back.code).toBe(error.code);
      expect(back.message).toBe(error.message);
      expect(back.fields).toEqual(error.fields);
      expect(back.toPayload()).toEqual(error.toPayload());
    }
  });

  test("fromWire turns anything unrecognisable into code 1 instead of throwing", () => {
    const garbage: unknown[] = [
      null, undefined, 42, "boom", [], [1, 2], new Uint8Array([1]), { error_code: 99 }, { error_code: "9" },
      { error_code: 2.5 }, { payload: "x" }, { payload: [1] }, {},
    ];
    for (const wire of garbage) {
      const error = HermesError.fromWire(wire);
      expect(error).toBeInstanceOf(HermesError);
      expect(error.code).toBe(ErrorCode.UNKNOWN);
    }
  });

  test("fromWire without a string detail falls back to the code's name", () => {
    expect(HermesError.fromWire({ error_code: 9, detail: 5 }).message).toBe("TTL_EXPIRED");
  });

  test("from keeps HermesErrors and wraps anything else with its cause", () => {
    expect(HermesError.from(error)).toBe(error);
    const cause = new TypeError("bad");
    const wrapped = HermesError.from(cause);
    expect(wrapped.code).toBe(ErrorCode.INTERNAL);
    expect(wrapped.message).toBe("bad");
    expect(wrapped.cause).toBe(cause);
    expect(HermesError.from("text", ErrorCode.UNAVAILABLE)).toMatchObject({ code: 10, message: "text" });
  });
});

describe("HermesError across module copies", () => {
  test("an error made by another copy of the class (a bundled host meeting a module from source) is still instanceof", async () => {
    // A second, independent copy of the module: same file under a query string is a new module instance.
    const other = (await import(`../../mesh/errors.ts?copy=${Date.now()}`)) as typeof import("../../mesh/errors.ts");
    expect(other.HermesError).not.toBe(HermesError);
    const foreign = new other.HermesError(4, "from the other copy", { requested_tool: "x" });
    expect(foreign instanceof HermesError).toBe(true);
    expect(HermesError.from(foreign).code).toBe(4);
    expect(new Error("plain") instanceof HermesError).toBe(false);
  });
});
