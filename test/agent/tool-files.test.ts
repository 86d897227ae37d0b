/**
 * file_read and file_write on real files: inside the sandbox they work; `..`, absolute paths,
 * symlinks, hard links and special files are refused, also while a child process races them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ToolRegistry, type ToolContext, type ToolResult } from "../../src/agent/tool-registry.ts";
import { fileReadTool, fileWriteTool } from "../../src/agent/tools/builtin-tools.ts";
import { ErrorCode } from "../../mesh/errors.ts";
import { spawnBun, tempDir } from "../helpers.ts";

const temp = tempDir("hm-tool-files-");
const box = join(temp.path, "box");
const outside = join(temp.path, "outside");
const registry = new ToolRegistry([fileReadTool({ sandboxDir: box, maxBytes: 64 }), fileWriteTool({ sandboxDir: box, maxBytes: 64 })]);
const ctx: ToolContext = { trace_id: "t", signal: new AbortController().signal };

beforeAll(() => {
  mkdirSync(join(box, "notes"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(box, "notes", "a.txt"), "hello");
  writeFileSync(join(outside, "secret.txt"), "secret");
  symlinkSync(outside, join(box, "out-dir")); // a directory link leading out
  symlinkSync(join(outside, "secret.txt"), join(box, "out-file")); // a file link leading out
  symlinkSync(join(outside, "not-yet.txt"), join(box, "dangling")); // a link to nothing, outside
  symlinkSync(join(box, "notes"), join(box, "notes-link")); // a link that stays inside
});
afterAll(() => temp[Symbol.dispose]());

function value(result: ToolResult): unknown {
  if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.error)}`);
  return result.value;
}
function error(result: ToolResult) {
  if (result.ok) throw new Error(`expected a refusal, got ${JSON.stringify(result.value)}`);
  return result.error;
}

describe("inside the sandbox", () => {
  test("reads a file", async () => {
    expect(value(await registry.call("file_read", { path: "notes/a.txt" }, ctx))).toEqual({ path: "notes/a.txt", content: "hello", bytes: 5, truncated: false });
  });

  test("writes a file, creating directories, then appends to it", async () => {
    expect(value(await registry.call("file_write", { path: "out/deep/r.txt", content: "one" }, ctx))).toEqual({ path: "out/deep/r.txt", bytes: 3 });
    await registry.call("file_write", '{"path": "out/deep/r.txt", "content": "+two", "append": "yes"}', ctx);
    expect(readFileSync(join(box, "out/deep/r.txt"), "utf8")).toBe("one+two");
  });

  test("`..` that stays inside is fine", async () => {
    expect(value(await registry.call("file_read", { path: "notes/../notes/a.txt" }, ctx))).toMatchObject({ path: "notes/a.txt", content: "hello" });
  });

  test("a long file is cut at the limit and marked truncated", async () => {
    writeFileSync(join(box, "long.txt"), "x".repeat(100));
    expect(value(await registry.call("file_read", { path: "long.txt" }, ctx))).toEqual({ path: "long.txt", content: "x".repeat(64), bytes: 100, truncated: true });
  });

  test("content over the write limit is code 6, and nothing is written", async () => {
    expect(error(await registry.call("file_write", { path: "big.txt", content: "y".repeat(65) }, ctx))).toMatchObject({ error_code: ErrorCode.RESOURCE_EXHAUSTED, used: 65, limit: 64 });
    expect(existsSync(join(box, "big.txt"))).toBe(false);
  });

  test("a missing file and a directory are code 2 the model can act on", async () => {
    expect(error(await registry.call("file_read", { path: "nope.txt" }, ctx))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, reason: '"nope.txt" does not exist' });
    expect(error(await registry.call("file_read", { path: "notes" }, ctx))).toMatchObject({ reason: '"notes" is a directory, not a file' });
  });

  test("the call's context may name the sandbox", async () => {
    const other = join(temp.path, "other");
    mkdirSync(other);
    writeFileSync(join(other, "b.txt"), "from ctx");
    expect(value(await registry.call("file_read", { path: "b.txt" }, { ...ctx, sandboxDir: other }))).toMatchObject({ content: "from ctx" });
  });

  test("without any sandbox the tools refuse to work (code 7)", async () => {
    const bare = new ToolRegistry([fileReadTool()]);
    expect(error(await bare.call("file_read", { path: "a.txt" }, ctx))).toMatchObject({ error_code: ErrorCode.INTERNAL, detail: "file_read has no sandbox directory configured" });
  });
});

describe("escapes are refused with code 2 and a reason", () => {
  const escapes: Array<[string, string, string]> = [
    ["`..` out of the sandbox", "../outside/secret.txt", "escapes the sandbox through '..'"],
    ["`..` deeper", "notes/../../outside/secret.txt", "escapes the sandbox through '..'"],
    ["an absolute path", join(outside, "secret.txt"), "is an absolute path"],
    ["/etc/passwd", "/etc/passwd", "is an absolute path"],
    ["a directory symlink out", "out-dir/secret.txt", "leads outside the sandbox through a symlink"],
    ["a file symlink out", "out-file", "leads outside the sandbox through a symlink"],
    ["a symlink that stays inside (none is followed)", "notes-link/a.txt", "goes through a symlink, and the file tools follow none"],
  ];

  test.each(escapes)("read: %s", async (_what, path, why) => {
    const refused = error(await registry.call("file_read", { path }, ctx));
    expect(refused).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, reason: `${JSON.stringify(path)} ${why}` });
    expect(String(refused.expected)).toContain("relative path inside the sandbox");
  });

  test.each(escapes)("write: %s", async (_what, path, why) => {
    expect(error(await registry.call("file_write", { path, content: "pwned" }, ctx))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, reason: `${JSON.stringify(path)} ${why}` });
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("secret");
  });

  test("write: a new file under a directory symlink out is not created", async () => {
    error(await registry.call("file_write", { path: "out-dir/new/x.txt", content: "pwned" }, ctx));
    expect(existsSync(join(outside, "new"))).toBe(false);
  });

  test("write: a dangling symlink pointing out is not written through", async () => {
    expect(error(await registry.call("file_write", { path: "dangling", content: "pwned" }, ctx))).toMatchObject({ reason: '"dangling" goes through a symlink whose target does not exist' });
    expect(existsSync(join(outside, "not-yet.txt"))).toBe(false);
  });
});

describe("hard links and special files", () => {
  test("a hard link to a file outside is refused for reading, writing and appending, and the file is unchanged", async () => {
    const target = join(outside, "linked.txt");
    writeFileSync(target, "outside content");
    linkSync(target, join(box, "hard.txt"));
    const why = '"hard.txt" has 2 hard links, and a file with more than one is refused (another link may be outside the sandbox)';
    expect(error(await registry.call("file_read", { path: "hard.txt" }, ctx))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, reason: why });
    expect(error(await registry.call("file_write", { path: "hard.txt", content: "pwned" }, ctx))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, reason: why });
    expect(error(await registry.call("file_write", { path: "hard.txt", content: "pwned", append: true }, ctx))).toMatchObject({ reason: why });
    expect(readFileSync(target, "utf8")).toBe("outside content");
  });

  test("a FIFO is refused at once for reading and writing, without waiting for its other end", async () => {
    const made = Bun.spawnSync(["mkfifo", join(box, "pipe")]);
    expect(made.exitCode).toBe(0);
    const why = '"pipe" is not a regular file (a FIFO, socket or device), refused';
    const started = performance.now();
    expect(error(await registry.call("file_read", { path: "pipe" }, ctx))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, reason: why });
    const readMs = performance.now() - started;
    expect(error(await registry.call("file_write", { path: "pipe", content: "x" }, ctx))).toMatchObject({ error_code: ErrorCode.INVALID_REQUEST, reason: why });
    const bothMs = performance.now() - started;
    console.log(`FIFO refused: read in ${readMs.toFixed(1)} ms, read and write in ${bothMs.toFixed(1)} ms`);
    expect(bothMs).toBeLessThan(500);
    expect(statSync(join(box, "pipe")).isFIFO()).toBe(true);
  });
});

describe("a directory swapped for a symlink out, in a loop", () => {
  test("no read returns the outside file and no write lands outside", async () => {
    const race = join(box, "race");
    const raceOut = join(temp.path, "race-outside");
    mkdirSync(race);
    mkdirSync(raceOut);
    writeFileSync(join(race, "secret.txt"), "inside");
    writeFileSync(join(raceOut, "secret.txt"), "OUTSIDE SECRET");
    await using swapper = spawnBun(join(import.meta.dir, "symlink-swap-fixture.ts"), [race, raceOut]);
    await swapper.waitForLine(/^ready$/);

    const counts = { reads: 0, readsOk: 0, writes: 0, writesOk: 0, escapedReads: 0 };
    const deadline = performance.now() + 2500;
    // A few calls in flight at once, as an agent's parallel tool calls would be.
    const worker = async (id: number) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const read = await registry.call("file_read", { path: "race/secret.txt" }, ctx);
        counts.reads++;
        if (read.ok) {
          counts.readsOk++;
          if ((read.value as { content: string }).content.includes("OUTSIDE")) counts.escapedReads++;
        }
        const path = [`race/secret.txt`, `race/new-${id}-${i % 16}.txt`, `race/sub-${i % 4}/deep.txt`][i % 3]!;
        const write = await registry.call("file_write", { path, content: "inside" }, ctx);
        counts.writes++;
        if (write.ok) counts.writesOk++;
      }
    };
    await Promise.all([0, 1, 2, 3].map(worker));
    await swapper[Symbol.asyncDispose]();

    const landedOutside = readdirSync(raceOut, { recursive: true }).filter((name) => name !== "secret.txt");
    console.log(`race: ${counts.reads} reads (${counts.readsOk} allowed), ${counts.writes} writes (${counts.writesOk} allowed); ${counts.escapedReads} reads and ${landedOutside.length} writes escaped`);
    expect(counts.escapedReads).toBe(0);
    expect(landedOutside).toEqual([]);
    expect(readFileSync(join(raceOut, "secret.txt"), "utf8")).toBe("OUTSIDE SECRET");
    // Both states of the loop were met: some calls found the directory, some the symlink.
    expect(counts.readsOk).toBeGreaterThan(0);
    expect(counts.readsOk).toBeLessThan(counts.reads);
    expect(counts.writesOk).toBeGreaterThan(0);
  });
});
