import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { EventLog } from "../../src/observability/event-log.ts";
import { tempDir } from "../helpers.ts";

const lines = (path: string) => readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));

describe("EventLog", () => {
  test("object and pre-serialised lines come out as JSON Lines with the bound fields, in order", async () => {
    using dir = tempDir();
    const path = join(dir.path, "logs", "echo.jsonl");
    const log = new EventLog(path, { actor: "echo" });
    log.write({ event: "started", n: 1 });
    log.writeFields(`"event":"handled","trace_id":${JSON.stringify('quote " and 你好')}`);
    await log.close();
    const [a, b] = lines(path);
    expect(a).toMatchObject({ actor: "echo", event: "started", n: 1 });
    expect(b).toMatchObject({ actor: "echo", event: "handled", trace_id: 'quote " and 你好' });
    expect(typeof b.ts).toBe("number");
  });

  test("flush writes what is buffered; a full file rotates to .1.jsonl and starts again", async () => {
    using dir = tempDir();
    const path = join(dir.path, "a.jsonl");
    const log = new EventLog(path, {}, { rotateBytes: 2000 });
    for (let i = 0; i < 30; i++) log.write({ event: "x", i, pad: "y".repeat(50) });
    log.flush();
    expect(lines(join(dir.path, "a.1.jsonl")).map((l) => l.i)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    log.write({ event: "after", i: 30 });
    await log.close();
    expect(lines(path).map((l) => l.i)).toEqual([30]);
  });
});
