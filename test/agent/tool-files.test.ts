/** file_read and file_write on real files: inside the sandbox they work; `..`, absolute paths and symlinks out are refused. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ToolRegistry, type ToolContext, type ToolResult } from "../../src/agent/tool-registry.ts";
import { fileReadTool, fileWriteTool } from "../../src/agent/tools/builtin-tools.ts";
import { ErrorCode } from "../../src/protocol/error-codes.ts";
import { tempDir } from "../helpers.ts";

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

  test("`..` that stays inside is fine, and so is a symlink that stays inside", async () => {
    expect(value(await registry.call("file_read", { path: "notes/../notes/a.txt" }, ctx))).toMatchObject({ content: "hello" });
    expect(value(await registry.call("file_read", { path: "notes-link/a.txt" }, ctx))).toMatchObject({ path: "notes/a.txt", content: "hello" });
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
