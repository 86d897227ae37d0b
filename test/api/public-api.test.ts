/**
 * The public entry (src/index.ts) is a curated API: at most about 60 names, and every one
 * documented with an example where it is declared. Internals go through src/internal.ts.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import ts from "typescript";

const ROOT = join(import.meta.dir, "../..");
const program = ts.createProgram([join(ROOT, "src/index.ts"), join(ROOT, "src/internal.ts")], {
  target: ts.ScriptTarget.ESNext,
  module: ts.ModuleKind.Preserve,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowImportingTsExtensions: true,
  noEmit: true,
  types: ["bun"],
});
const checker = program.getTypeChecker();

function exportsOf(file: string): ts.Symbol[] {
  const source = program.getSourceFile(join(ROOT, file))!;
  return checker.getExportsOfModule(checker.getSymbolAtLocation(source)!);
}

/** The declaration an exported name stands for, through re-exports. */
function declarationOf(symbol: ts.Symbol): ts.Declaration | undefined {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  return target.declarations?.[0];
}

const isValue = (symbol: ts.Symbol) => {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  return (target.flags & ts.SymbolFlags.Value) !== 0;
};

describe("public API", () => {
  const publicNames = exportsOf("src/index.ts");

  // 62 names before interop: MCP and A2A (issue 17) add a few entry points and their option types.
  test("at most about 70 names, runtime names far fewer than the 124 of before", () => {
    expect(publicNames.length).toBeLessThanOrEqual(72);
    expect(publicNames.filter(isValue).length).toBeLessThanOrEqual(40);
  });

  test("every public name is documented where it is declared, runtime ones with an example", () => {
    const undocumented: string[] = [];
    const withoutExample: string[] = [];
    for (const symbol of publicNames) {
      const declaration = declarationOf(symbol);
      if (!declaration) continue;
      // The JSDoc sits on the statement for `export const X = …`.
      const owner = ts.isVariableDeclaration(declaration) ? declaration.parent.parent : declaration;
      const docs = ts.getJSDocCommentsAndTags(owner);
      const text = docs.map((d) => d.getText()).join("\n");
      if (text.trim() === "") undocumented.push(symbol.name);
      else if (isValue(symbol) && !text.includes("@example")) withoutExample.push(symbol.name);
    }
    expect({ undocumented, withoutExample }).toEqual({ undocumented: [], withoutExample: [] });
  });

  test("the internal entry keeps everything the public one has, and more", () => {
    const internal = new Set(exportsOf("src/internal.ts").map((s) => s.name));
    for (const symbol of publicNames) expect(internal.has(symbol.name)).toBe(true);
    expect(internal.size).toBeGreaterThan(publicNames.length * 2);
  });
});
