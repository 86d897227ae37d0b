/** The calculator: a table of good and bad expressions, a property test against an independent oracle, and a fuzz test. */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { evaluateExpression, MAX_EXPRESSION_LENGTH, MAX_NESTING } from "../../src/agent/calculator.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { seededRandom, type SeededRandom } from "../conformance/seeded-random.ts";

/** A readable test title for an expression, however long. */
const title = (expression: string) =>
  expression.length > 40 ? `${JSON.stringify(expression.slice(0, 16))}... (${expression.length} characters)` : JSON.stringify(expression);

/** The HermesError an evaluation throws (fails the test if it returns instead). */
function rejection(expression: string): HermesError {
  try {
    const value = evaluateExpression(expression);
    throw new Error(`expected ${JSON.stringify(expression.slice(0, 60))} to be rejected, got ${value}`);
  } catch (error) {
    if (!(error instanceof HermesError)) throw error;
    return error;
  }
}

describe("well-formed expressions", () => {
  const cases: Array<[string, number]> = [
    ["2+2", 4],
    ["2 + 3 * 4", 14],
    ["(2 + 3) * 4", 20],
    ["10 - 4 - 3", 3], // left-associative
    ["100 / 10 / 5", 2],
    ["1 - 2 + 3", 2],
    ["2 * 3 % 4", 2], // * and % share a level, left to right
    ["2^3^2", 512], // right-associative: 2^(3^2)
    ["(2^3)^2", 64],
    ["2 ^ 3 * 2", 16],
    ["-2^2", -4], // the power binds tighter than the sign on its left, as in mathematics
    ["(-2)^2", 4],
    ["-2 ^ -2", -0.25],
    ["2^-1", 0.5], // an exponent may carry a sign
    ["2 * -3 ^ 2", -18],
    ["2^0.5", Math.SQRT2],
    ["-3 * -3", 9],
    ["3 - -2", 5],
    ["--3", 3],
    ["+-+1", -1],
    ["+5", 5],
    ["-(2+3)", -5],
    ["7 % 3", 1],
    ["-7 % 3", -1], // the dividend's sign, as in JavaScript
    ["7.5 % 2", 1.5],
    ["10 / 4", 2.5],
    ["1/3", 1 / 3],
    ["0.1 + 0.2", 0.1 + 0.2], // IEEE, nothing more and nothing less
    ["1.5", 1.5],
    [".5", 0.5],
    ["5.", 5],
    ["007", 7],
    ["1e3", 1000],
    ["1E3", 1000],
    ["1e+2", 100],
    ["2.5E-3", 0.0025],
    [".5e1 % 3", 2],
    ["1.e3", 1000],
    ["1e308", 1e308],
    ["0 * -1", 0], // -0 comes back as 0
    ["  ( 1 +\t2 ) \n* 3  ", 9],
    ["\u3000 1\u00a0+ 1", 2], // Unicode whitespace (ideographic, no-break space) counts
    ["((((7))))", 7],
    ["(1+2)*3^2", 27],
    [`${"(".repeat(MAX_NESTING)}1${")".repeat(MAX_NESTING)}`, 1],
    [`${"-".repeat(MAX_NESTING)}1`, 1],
    [`${"1+".repeat(4999)}1`, 5000], // 9,999 characters, all on one level
  ];
  test.each(cases.map(([e, v]) => [title(e), v, e] as const))("%s = %p", (_title, expected, expression) => {
    expect(evaluateExpression(expression)).toBe(expected);
  });
});

describe("bad input: code 2 with a reason naming the position", () => {
  const cases: Array<[string, RegExp, number]> = [
    ["", /expression is empty \(end of input at position 1\)/, 1],
    ["   ", /expression is empty \(end of input at position 4\)/, 4],
    ["1 +", /unexpected end of input at position 4/, 4],
    ["+", /unexpected end of input at position 2/, 2],
    ["2 * (3 -", /unexpected end of input at position 9/, 9],
    ["(1+2", /missing '\)' for the '\(' at position 1 \(end of input at position 5\)/, 5],
    ["((1+2)", /missing '\)' for the '\(' at position 1/, 7],
    ["1+2)", /unexpected '\)' at position 4/, 4],
    ["()", /unexpected '\)' at position 2/, 2],
    ["*1", /unexpected '\*' at position 1/, 1],
    ["1 2", /unexpected number '2' at position 3/, 3],
    ["(1)(2)", /unexpected '\(' at position 4/, 4],
    ["1.2.3", /unexpected number '\.3' at position 4/, 4],
    ["2 ** 3", /unexpected '\*' at position 4/, 4],
    ["1/0", /division by zero at position 2/, 2],
    ["1 / (2 - 2)", /division by zero at position 3/, 3],
    ["1/-0", /division by zero at position 2/, 2],
    ["5 % (2-2)", /modulo by zero at position 3/, 3],
    ["2 + x", /unknown character 'x' at position 5/, 5],
    ["2 × 3", /unknown character '×' at position 3/, 3],
    ["😀😀x", /unknown character '😀' at position 1/, 1],
    ["1+😀", /unknown character '😀' at position 3/, 3],
    ["2+2=", /unknown character '=' at position 4/, 4],
    ["1\u0000", /unknown character '\\u0000' at position 2/, 2],
    [".", /'\.' without digits at position 1/, 1],
    ["1 + .", /'\.' without digits at position 5/, 5],
    ["1e", /exponent without digits at position 2/, 2],
    ["3e+", /exponent without digits at position 2/, 2],
    ["1e400", /number '1e400' at position 1 is too large/, 1],
    ["1e308 * 10", /is not finite \(at position 7\)/, 7],
    ["(-8)^(1/3)", /is not a real number \(at position 5\)/, 5],
    ["0^-1", /is not finite \(at position 2\)/, 2],
    [`${"(".repeat(MAX_NESTING + 1)}1${")".repeat(MAX_NESTING + 1)}`, /nesting deeper than 200 levels at position 201/, 201],
    [`${"-".repeat(5000)}1`, /nesting deeper than 200 levels at position 201/, 201],
    [`${"2^".repeat(300)}1`, /nesting deeper than 200 levels at position 402/, 402],
    ["1".repeat(MAX_EXPRESSION_LENGTH + 1), /longer than 10000 characters: position 10001/, 10001],
    ["1".repeat(10 * MAX_EXPRESSION_LENGTH), /longer than 10000 characters: position 10001/, 10001],
  ];
  test.each(cases.map(([e, r, p]) => [title(e), e, r, p] as const))("%s", (_title, expression, reason, position) => {
    const error = rejection(expression);
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error.fields.reason).toMatch(reason);
    expect(error.fields.position).toBe(position);
    expect(typeof error.fields.expected).toBe("string");
    expect(error.message).toContain(error.fields.reason as string);
  });

  test("`expected` says what would have been valid there", () => {
    expect(rejection("1 +").fields.expected).toBe("a number, '(', '+' or '-'");
    expect(rejection("(1 2)").fields.expected).toBe("an operator (+ - * / % ^) or ')'");
    expect(rejection("1 2").fields.expected).toBe("an operator (+ - * / % ^) or the end of the expression");
    expect(rejection("(1").fields.expected).toBe("')'");
    expect(rejection("1/0").fields.expected).toBe("a non-zero divisor");
    expect(rejection("2 × 3").fields.expected).toBe("'*' instead of '×'");
    expect(rejection("2**3").fields.expected).toContain("'^' for powers");
  });

  test("a value that is not a string is code 2 too (callers from plain JavaScript)", () => {
    const error = rejection(42 as unknown as string);
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error.fields.reason).toMatch(/not a string/);
  });
});

// An expression tree, its value computed from the tree (the oracle, sharing no code with the
// parser) and its text with the parentheses its structure needs, plus random redundant ones,
// random whitespace and random unary signs.
type Tree = { value: number } | { op: "+" | "-" | "*"; left: Tree; right: Tree } | { neg: Tree };
const precedence = (tree: Tree) => ("value" in tree ? 4 : "neg" in tree ? 3 : tree.op === "*" ? 2 : 1);

function randomTree(random: SeededRandom, depth: number): Tree {
  const roll = random.int(10);
  if (depth === 0 || roll < 3) return { value: random.int(100) };
  if (roll < 4) return { neg: randomTree(random, depth - 1) };
  return { op: random.pick(["+", "-", "*"] as const), left: randomTree(random, depth - 1), right: randomTree(random, depth - 1) };
}

function evaluateTree(tree: Tree): number {
  if ("value" in tree) return tree.value;
  if ("neg" in tree) return -evaluateTree(tree.neg);
  const [left, right] = [evaluateTree(tree.left), evaluateTree(tree.right)];
  return tree.op === "+" ? left + right : tree.op === "-" ? left - right : left * right;
}

function render(tree: Tree, random: SeededRandom): string {
  const space = () => random.pick(["", "", "", " ", "  ", "\t"]);
  const wrap = (text: string, needed: boolean) => (needed || random.int(10) === 0 ? `(${space()}${text}${space()})` : text);
  if ("value" in tree) return wrap(String(tree.value), false);
  if ("neg" in tree) return wrap(`-${space()}${wrapChild(tree.neg, 3, false, random)}`, false);
  const p = precedence(tree);
  return wrap(`${wrapChild(tree.left, p, false, random)}${space()}${tree.op}${space()}${wrapChild(tree.right, p, true, random)}`, false);
}

/** A child needs parentheses below its parent's precedence (and at it, on the right: the tree must parse back as built). */
function wrapChild(child: Tree, parent: number, right: boolean, random: SeededRandom): string {
  const text = render(child, random);
  const p = precedence(child);
  return p < parent || (right && p === parent) ? `(${text})` : text;
}

describe("property: agrees with an independent evaluation", () => {
  test("4,000 random expressions of integers, + - * and parentheses", () => {
    const random = seededRandom(20240611);
    for (let i = 0; i < 4000; i++) {
      const tree = randomTree(random, 1 + random.int(6));
      const text = render(tree, random);
      const expected = evaluateTree(tree);
      let got: number;
      try {
        got = evaluateExpression(text);
      } catch (error) {
        throw new Error(`seed ${random.seed}, case ${i}: ${JSON.stringify(text)} threw ${(error as Error).message}`);
      }
      if (got !== (expected === 0 ? 0 : expected)) throw new Error(`seed ${random.seed}, case ${i}: ${JSON.stringify(text)} = ${got}, expected ${expected}`);
    }
  });
});

describe("fuzz: random characters", () => {
  test("5,000 random strings: a finite number or a HermesError code 2 with a position, nothing else", () => {
    const random = seededRandom(77);
    const alphabet = [..."0123456789", ..."0123456789", ..."..++--**//%%^^(())  ", "e", "E", "\t", "\n", "x", "×", "😀", "\u0000", "=", ","];
    let numbers = 0;
    let errors = 0;
    for (let i = 0; i < 5000; i++) {
      const text = Array.from({ length: random.int(24) }, () => random.pick(alphabet)).join("");
      try {
        const value = evaluateExpression(text);
        if (!Number.isFinite(value)) throw new Error(`${JSON.stringify(text)} = ${value}`);
        numbers++;
      } catch (error) {
        if (!(error instanceof HermesError) || error.code !== ErrorCode.INVALID_REQUEST) throw new Error(`${JSON.stringify(text)} threw ${String(error)}`);
        const position = error.fields.position as number;
        if (!(Number.isInteger(position) && position >= 1 && position <= Array.from(text).length + 1)) throw new Error(`${JSON.stringify(text)}: position ${position}`);
        if (!String(error.fields.reason).includes(`position ${position}`)) throw new Error(`${JSON.stringify(text)}: reason ${String(error.fields.reason)}`);
        errors++;
      }
    }
    // Both outcomes were exercised, so the test could have failed either way.
    expect(numbers).toBeGreaterThan(100);
    expect(errors).toBeGreaterThan(100);
  });
});

test("the product code has no eval, no Function and no dynamic import", () => {
  for (const file of ["../../src/agent/calculator.ts", "../../actors/calculator.ts"]) {
    const source = readFileSync(join(import.meta.dir, file), "utf8");
    expect(source).not.toMatch(/\beval\s*\(|\bFunction\s*\(|new\s+Function|import\s*\(/);
  }
});
