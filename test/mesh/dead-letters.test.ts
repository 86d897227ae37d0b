/** The dead-letter list keeps the newest letters within a count and a payload byte budget. */
import { describe, expect, test } from "bun:test";
import { createEvent } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { DeadLetters } from "../../mesh/peer-link.ts";

const gaveUp = new HermesError(ErrorCode.UNAVAILABLE, "gave up after 10 delivery attempts");
const letter = (n: number, bytes: number) => createEvent("sender", { target_agent: "echo" }, { n, pad: "x".repeat(bytes) });

describe("DeadLetters", () => {
  test("keeps the newest `max` letters, oldest first, and counts every one", () => {
    const letters = new DeadLetters({ max: 3 });
    for (let n = 1; n <= 5; n++) letters.add(letter(n, 10), "echo", gaveUp);
    expect(letters.list().map((d) => d.envelope.payload.n)).toEqual([3, 4, 5]);
    expect([letters.size, letters.total]).toEqual([3, 5]);
    expect(letters.list()[0]).toMatchObject({ destination: "echo", error: { error_code: ErrorCode.UNAVAILABLE } });
  });

  test("past the byte budget the oldest letters give up their payloads, in the same letter objects", () => {
    const letters = new DeadLetters({ max: 100, maxBytes: 25_000 });
    letters.add(letter(1, 10_000), "echo", gaveUp);
    const first = letters.list()[0]!;
    letters.add(letter(2, 10_000), "echo", gaveUp);
    expect(letters.list().every((d) => d.payloadDroppedBytes === undefined)).toBe(true);
    letters.add(letter(3, 10_000), "echo", gaveUp);
    expect(letters.list().map((d) => d.payloadDroppedBytes === undefined)).toEqual([false, true, true]);
    expect(letters.list()[0]).toBe(first);
    expect(first.envelope.payload).toEqual({});
    expect(first.payloadDroppedBytes).toBeGreaterThanOrEqual(10_000);
    expect(first.envelope.message_id).toBeString();
    expect(letters.bytes).toBeLessThanOrEqual(25_000);
    expect(letters.size).toBe(3);
  });

  test("a payload alone over the budget is let go at once, the older ones kept; a letter leaving by count takes its bytes along", () => {
    const letters = new DeadLetters({ max: 2, maxBytes: 5_000 });
    letters.add(letter(1, 1_000), "echo", gaveUp);
    letters.add(letter(2, 50_000), "echo", gaveUp);
    expect(letters.list().map((d) => d.payloadDroppedBytes === undefined)).toEqual([true, false]);
    letters.add(letter(3, 1_000), "echo", gaveUp);
    letters.add(letter(4, 1_000), "echo", gaveUp);
    expect(letters.list().map((d) => d.envelope.payload.n)).toEqual([3, 4]);
    expect(letters.bytes).toBeGreaterThanOrEqual(2_000);
    expect(letters.bytes).toBeLessThan(5_000);
  });

  test("a budget of 0 bytes keeps only the letters' metadata; a bad limit is code 2", () => {
    const letters = new DeadLetters({ maxBytes: 0 });
    letters.add(letter(1, 10), "echo", gaveUp);
    expect(letters.list()[0]!.envelope.payload).toEqual({});
    expect(letters.bytes).toBe(0);
    for (const limits of [{ max: 0 }, { max: 1.5 }, { maxBytes: -1 }, { max: Number.NaN }]) {
      expect(() => new DeadLetters(limits)).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_REQUEST }));
    }
  });
});
