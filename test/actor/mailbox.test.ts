import { describe, expect, test } from "bun:test";
import { Mailbox } from "../../src/actor/mailbox.ts";

describe("Mailbox", () => {
  test("serves the highest priority first and keeps FIFO order within a priority", () => {
    const box = new Mailbox<string>();
    box.push("a5", 5);
    box.push("b5", 5);
    box.push("c9", 9);
    box.push("d0", 0);
    box.push("e9", 9);
    box.push("f5", 5);
    expect(box.size).toBe(6);
    const order: string[] = [];
    for (let item = box.shift(); item !== undefined; item = box.shift()) order.push(item);
    expect(order).toEqual(["c9", "e9", "a5", "b5", "f5", "d0"]);
    expect(box.size).toBe(0);
    expect(box.shift()).toBeUndefined();
  });

  test("a higher priority arriving later still overtakes; out-of-range priorities count as 5", () => {
    const box = new Mailbox<string>();
    box.push("low", 1);
    expect(box.shift()).toBe("low");
    box.push("mid", 5);
    box.push("weird", 42);
    box.push("high", 8);
    expect([box.shift(), box.shift(), box.shift()]).toEqual(["high", "mid", "weird"]);
  });

  test("stays correct over many interleaved pushes and shifts", () => {
    const box = new Mailbox<number>();
    const reference: Array<{ p: number; seq: number }> = [];
    let seq = 0;
    for (let round = 0; round < 2000; round++) {
      const p = (round * 7) % 10;
      box.push(seq, p);
      reference.push({ p, seq: seq++ });
      if (round % 3 === 0) {
        reference.sort((a, b) => b.p - a.p || a.seq - b.seq);
        expect(box.shift()).toBe(reference.shift()!.seq);
      }
    }
    expect(box.size).toBe(reference.length);
  });
});
