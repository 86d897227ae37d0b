/**
 * An actor module that does not compile: each of Bun's build errors at its file:line:column,
 * once, with the source line and a caret, both from import() directly and through `hermes-mesh up`.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatBuildErrors } from "../../src/actor/build-errors.ts";
import { tempDir } from "../helpers.ts";

const CLI = join(import.meta.dir, "../../src/cli/main.ts");
const DEFINE_ACTOR = join(import.meta.dir, "../../src/actor/define-actor.ts");

// Written at test time, not kept as a fixture file: a file with syntax errors in the tree would
// break the typecheck of the project.
const BROKEN = `import { defineActor } from ${JSON.stringify(DEFINE_ACTOR)};

export default defineActor({
  async onRequest(request) {
    const answer = ;
    return { answer };
  },
});
`;
// Three errors Bun reports together, as an AggregateError.
const THREE_ERRORS = "const a = 1;\nconst a = 2;\nlet b = 1;\nlet b = 2;\nfunction f() { return await 3; }\nexport default {};\n";

const count = (text: string, part: string) => text.split(part).length - 1;

async function importError(path: string): Promise<unknown> {
  return import(path).then(() => new Error(`expected ${path} to fail to load`), (error: unknown) => error);
}

describe("build errors of an actor module", () => {
  test("one syntax error: file:line:column: message, the source line and a caret under the column", async () => {
    using dir = tempDir();
    const file = join(dir.path, "broken.ts");
    writeFileSync(file, BROKEN);
    expect(formatBuildErrors(await importError(file))).toBe(`${file}:5:20: Unexpected ;\n    const answer = ;\n                   ^`);
  });

  test("several errors (Bun's AggregateError, whose own message has no position): each one, in order", async () => {
    using dir = tempDir();
    const file = join(dir.path, "three.ts");
    writeFileSync(file, THREE_ERRORS);
    const error = await importError(file);
    expect(error).toBeInstanceOf(AggregateError);
    const text = formatBuildErrors(error)!;
    expect(text.split("\n").filter((line) => line.startsWith(file))).toEqual([
      `${file}:2:7: "a" has already been declared`,
      `${file}:4:5: "b" has already been declared`,
      `${file}:5:29: "await" can only be used inside an "async" function`,
    ]);
    expect(text).not.toContain("errors building");
  });

  test("an import that does not resolve names the module and its importer; other errors are not build errors", async () => {
    using dir = tempDir();
    const file = join(dir.path, "importer.ts");
    writeFileSync(file, 'import missing from "./nowhere.ts";\nexport default missing;\n');
    expect(formatBuildErrors(await importError(file))).toBe(`Cannot find module './nowhere.ts' imported from ${file}`);
    expect(formatBuildErrors(new Error("boom"))).toBeUndefined();
    expect(formatBuildErrors(new AggregateError([new Error("x")]))).toBeUndefined();
  });

  test("hermes-mesh up with a broken module: each error once, at its position; the command line is not repeated", async () => {
    using dir = tempDir();
    writeFileSync(join(dir.path, "broken.ts"), BROKEN);
    writeFileSync(join(dir.path, "mesh.yaml"), "mesh:\n  name: broken-module\nsupervisor:\n  children:\n    - actor: broken\n      module: ./broken.ts\n");
    const up = Bun.spawnSync([process.execPath, CLI, "up", join(dir.path, "mesh.yaml"), "--dir", join(dir.path, "run"), "--no-gateway"], { stdout: "pipe", stderr: "pipe", timeout: 30_000 });
    const output = up.stdout.toString() + up.stderr.toString();
    expect(up.exitCode).toBe(1);
    expect(count(output, "broken.ts:5:20: Unexpected ;")).toBe(1);
    expect(count(output, "Unexpected ;")).toBe(1);
    expect(output).toContain("[broken]     const answer = ;\n[broken]                    ^\n");
    expect(output).toContain("hermes-mesh up: the mesh did not start: supervisor 'root': child 'broken' failed to start: actor broken: exited before it was ready (exit code 1)");
    // The actor host's command line (its --module ... --instance ... arguments): at most once.
    expect(count(output, "--instance 0 --pool 1")).toBeLessThanOrEqual(1);
    expect(output).not.toContain("AggregateError");
  }, 40_000);
});
