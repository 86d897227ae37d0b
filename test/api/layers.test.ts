/**
 * The layers the folders show (docs/architecture.md): mesh/ imports nothing from src/, uses no
 * runtime's own API outside its socket adapter, and no file imports in a circle.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const IMPORT = /^(?:import|export)\s+(?:type\s+)?(?:[\w*\s{},]*?)\s*from\s+"(\.[^"]+)"/gms;

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return sourceFiles(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return [...text.matchAll(IMPORT)].map((m) => normalize(join(dirname(file), m[1]!)));
}

const mesh = sourceFiles("mesh");
const all = [...mesh, ...sourceFiles("src")];

describe("layers", () => {
  test("mesh/ imports nothing from src/", () => {
    const upward = mesh.flatMap((file) => importsOf(file).filter((target) => !target.startsWith("mesh/")).map((target) => `${file} -> ${target}`));
    expect(upward).toEqual([]);
  });

  test("mesh/ calls no runtime's own API outside the socket adapter", () => {
    const bound = mesh
      .filter((file) => file !== "mesh/socket-transport.ts")
      .filter((file) => /\bBun\.|import\.meta\.dir\b|from "bun"|\bDeno\./.test(readFileSync(join(ROOT, file), "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "")));
    expect(bound).toEqual([]);
  });

  test("no import cycles in mesh/ and src/, type-only imports included", () => {
    const graph = new Map(all.map((file) => [file, importsOf(file).filter((t) => t.endsWith(".ts"))]));
    // The imports were read at all (multi-line ones included).
    expect([...graph.values()].flat().length).toBeGreaterThan(300);
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const walk = (file: string, stack: string[]) => {
      state.set(file, "open");
      for (const next of graph.get(file) ?? []) {
        if (state.get(next) === "open") cycles.push([...stack.slice(stack.indexOf(next)), next].join(" -> "));
        else if (!state.has(next)) walk(next, [...stack, next]);
      }
      state.set(file, "done");
    };
    for (const file of all) if (!state.has(file)) walk(file, [file]);
    expect(cycles).toEqual([]);
  });

  test("mesh/ is a couple of dozen concepts (30 at most), none over about 550 lines", () => {
    expect(mesh.length).toBeLessThanOrEqual(30);
    const long = mesh.map((file) => [file, readFileSync(join(ROOT, file), "utf8").split("\n").length] as const).filter(([, lines]) => lines > 560);
    expect(long).toEqual([]);
  });
});

