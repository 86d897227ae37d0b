import { expect, test } from "bun:test";
import { join } from "node:path";
import { createEvent } from "../../mesh/envelope.ts";
import { EventLog } from "../../src/observability/event-log.ts";
import { EventLogTail } from "../../src/observability/event-log-reader.ts";
import { tempDir } from "../helpers.ts";

test("a tail follows a log across its rotations: every record and line once, in order, none of those flushed just before a rotation missed", async () => {
  using dir = tempDir();
  const path = join(dir.path, "logs", "echo.0.jsonl");
  const log = new EventLog(path, { actor: "echo#0" }, { rotateBytes: 4000 });
  const tail = new EventLogTail(path);
  const seen: number[] = [];
  const lines: number[] = [];
  try {
    for (let flush = 0; flush < 40; flush++) {
      for (let i = 0; i < 5; i++) log.handled(createEvent("client", { target_agent: "echo" }, {}), flush * 5 + i, 1, 1, undefined);
      log.write({ event: "batch", n: flush, pad: "p".repeat(150) });
      // The flush that passes 4,000 bytes appends, then renames the file: the tail finds it under .1.
      log.flush();
      for (const event of tail.read()) {
        if (event.event === "handled") seen.push(Number(event.started_at));
        else lines.push(Number(event.n));
      }
    }
  } finally {
    await log.close();
  }
  expect(seen).toEqual(Array.from({ length: 200 }, (_, i) => i));
  expect(lines).toEqual(Array.from({ length: 40 }, (_, i) => i));
  expect(tail.read()).toEqual([]);
});
