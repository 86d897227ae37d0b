import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../mesh/logger.ts";
import { createRequest } from "../../mesh/envelope.ts";
import { EventLog, spansPathOf } from "../../src/observability/event-log.ts";
import { readEvents } from "../../src/observability/event-log-reader.ts";
import { decodeSpans } from "../../src/observability/span-log-reader.ts";
import { diskKinds, injectInto, openDisk, type FullableDisk } from "../disk-full.ts";
import { tempDir, waitFor } from "../helpers.ts";

const lines = (path: string) => readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));

describe("EventLog", () => {
  test("lines come out as JSON Lines with the bound fields, in order", async () => {
    using dir = tempDir();
    const path = join(dir.path, "logs", "echo.jsonl");
    const log = new EventLog(path, { actor: "echo" });
    log.write({ event: "started", n: 1 });
    log.write({ event: "handled", trace_id: 'quote " and 你好' });
    await log.close();
    const [a, b] = lines(path);
    expect(a).toMatchObject({ actor: "echo", event: "started", n: 1 });
    expect(b).toMatchObject({ actor: "echo", event: "handled", trace_id: 'quote " and 你好' });
    expect(typeof b.ts).toBe("number");
  });

  test("lines are kept encoded: every character survives, across growth of the buffer and flushes past 256 KiB", async () => {
    using dir = tempDir();
    const path = join(dir.path, "utf8.jsonl");
    const log = new EventLog(path, { actor: "ü" });
    const texts = ["ascii", "你好 🌍", "a\u0000b", "é".repeat(40_000), "\ud83c\udf0d".repeat(3000), "z"];
    const expected: string[] = [];
    // About 2.6 MB of lines: the buffer grows past its first 16 KiB, and flushes happen as it fills.
    for (let i = 0; i < 100; i++) {
      const text = texts[i % texts.length]!;
      expected.push(text);
      log.write({ event: "x", i, text });
    }
    await log.close();
    const read = lines(path);
    expect(read.map((l) => l.i)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(read.map((l) => l.text)).toEqual(expected);
    expect(read.every((l) => l.actor === "ü")).toBe(true);
  });

  test("a line reaches the file by itself within the flush delay, and so does one written after that flush", async () => {
    using dir = tempDir();
    const path = join(dir.path, "later.jsonl");
    const log = new EventLog(path, { actor: "echo" });
    const onDisk = () => (existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0);
    try {
      log.write({ event: "first" });
      await waitFor(() => onDisk() === 1, "the first line flushed without another write or a close", 5000);
      // The timer is armed again by the next line after a flush (an idle log keeps none).
      log.write({ event: "second" });
      await waitFor(() => onDisk() === 2, "the second line flushed by itself too", 5000);
    } finally {
      await log.close();
    }
    expect(lines(path).map((l) => l.event)).toEqual(["first", "second"]);
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

/** A logger that keeps its lines, to see what an event log warns about. */
function capture() {
  const lines: Array<Record<string, unknown>> = [];
  return { lines, log: createLogger({}, (line) => lines.push(JSON.parse(line))) };
}

/** The echo actor's event log on `disk` (created where filling it applies), and what it warns. */
function echoLogOn(disk: FullableDisk): { path: string; warnings: ReturnType<typeof capture>; log: EventLog } {
  const path = join(disk.dir, "logs", "echo.jsonl");
  const warnings = capture();
  using _ = injectInto(disk);
  return { path, warnings, log: new EventLog(path, { actor: "echo" }, { log: warnings.log }) };
}

for (const { kind, skip } of diskKinds()) {
  describe.skipIf(skip !== undefined)(`EventLog on a full disk (${kind}${skip ? `; skipped: ${skip}` : ""})`, () => {
    test("never throws: drops and counts the lines it cannot write, warns once, and says how many when it writes again", async () => {
      using disk = openDisk(kind);
      const { path, warnings, log } = echoLogOn(disk);
      log.write({ event: "before", i: 0 });
      log.flush();
      disk.fill();
      // Enough for the file's last page and more: a tmpfs takes a write until its page is full.
      const pad = "y".repeat(300);
      for (let i = 1; i <= 40; i++) {
        log.write({ event: "during", i, pad });
        if (i % 10 === 0) log.flush();
      }
      expect(log.dropped).toBeGreaterThan(0);
      expect(warnings.lines.filter((l) => l.msg === "event log cannot write: dropping lines until it can")).toHaveLength(1);
      expect(String(warnings.lines[0]!.error)).toContain("ENOSPC");
      // A batch goes whole or not at all: the file holds no half line.
      expect(lines(path).map((l) => l.event)).toEqual(["before", ...Array.from({ length: 40 - log.dropped }, () => "during")]);
      disk.free();
      log.write({ event: "after", i: 41 });
      log.flush();
      const recovered = warnings.lines.find((l) => l.msg === "event log writing again");
      expect(recovered).toMatchObject({ dropped: log.dropped, dropped_total: log.dropped, path });
      const written = lines(path);
      expect(written.at(-2)).toMatchObject({ event: "log_dropped", actor: "echo", dropped: log.dropped });
      expect(written.at(-1)).toMatchObject({ event: "after", i: 41 });
      await log.close();
      expect(warnings.lines).toHaveLength(2);
    });

    test("span records it cannot write are dropped and counted, whole batches only; the JSON file says how many once writing works again", async () => {
      using disk = openDisk(kind);
      const { path, warnings, log } = echoLogOn(disk);
      const env = createRequest("s".repeat(400), { target_agent: "echo" }, {}, { trace_id: "t" });
      log.handled(env, 1, 1, 1, undefined);
      log.flush();
      disk.fill();
      for (let i = 2; i <= 60; i++) {
        log.handled(env, i, 1, 1, undefined);
        if (i % 10 === 0) log.flush();
      }
      log.flush();
      expect(log.dropped).toBeGreaterThan(0);
      expect(warnings.lines.filter((l) => l.msg === "event log cannot write: dropping lines until it can")).toHaveLength(1);
      disk.free();
      log.handled(env, 61, 1, 1, undefined);
      log.flush();
      await log.close();
      const records = decodeSpans(readFileSync(spansPathOf(path)));
      // Nothing half written: every record read back is whole, and the lost ones are exactly those counted.
      expect(records.length).toBe(61 - log.dropped);
      expect(records.at(-1)).toMatchObject({ started_at: 61 });
      expect(readEvents(path).find((e) => e.event === "log_dropped")).toMatchObject({ actor: "echo", dropped: log.dropped });
      expect(warnings.lines.find((l) => l.msg === "event log writing again")).toMatchObject({ dropped: log.dropped });
    });

    test("closed while it still cannot write, it warns with the count", async () => {
      using disk = openDisk(kind);
      const { warnings, log } = echoLogOn(disk);
      disk.fill();
      for (let i = 0; i < 30; i++) log.write({ event: "x", i, pad: "z".repeat(300) });
      await log.close();
      expect(log.dropped).toBeGreaterThan(0);
      expect(warnings.lines.at(-1)).toMatchObject({ msg: "event log closed while it could not write", dropped: log.dropped });
    });
  });
}

test("a log whose file cannot be opened at all drops lines instead of failing its owner", async () => {
  using dir = tempDir();
  writeFileSync(join(dir.path, "not-a-dir"), "");
  const warnings = capture();
  const log = new EventLog(join(dir.path, "not-a-dir", "x.jsonl"), {}, { log: warnings.log });
  log.write({ event: "x" });
  log.flush();
  await log.close();
  expect(log.dropped).toBe(1);
  expect(warnings.lines.map((l) => l.msg)).toEqual(["event log cannot write: dropping lines until it can", "event log closed while it could not write"]);
});
