import { ErrorCode, HermesError } from "../../mesh/errors.ts";

/** Longest expression accepted, in characters. */
export const MAX_EXPRESSION_LENGTH = 10_000;
/** Deepest nesting accepted: parentheses, unary signs and exponents, counted together. */
export const MAX_NESTING = 200;

type Token =
  | { kind: "number"; text: string; value: number; pos: number }
  | { kind: "op"; text: "+" | "-" | "*" | "/" | "%" | "^"; pos: number }
  | { kind: "(" | ")"; text: "(" | ")"; pos: number }
  | { kind: "end"; text: ""; pos: number };

const OPERAND = "a number, '(', '+' or '-'";
const WHITESPACE = /\s/u;
const DIGIT = /[0-9]/;
// Look-alikes people paste from documents, and what they meant.
const LOOKALIKES: Record<string, string> = { "×": "*", "÷": "/", "−": "-", "–": "-", "（": "(", "）": ")" };

/**
 * Evaluates an arithmetic expression with a tokenizer and a recursive-descent parser; no
 * `eval`, no `Function`. Numbers are decimals (`2`, `2.5`, `.5`, `1e3`, `2.5E-3`); operators,
 * loosest first: `+ -`, then `* / %`, then unary `+ -`, then `^` (right-associative; its
 * exponent may carry a sign), then parentheses. So `-2^2` is `-(2^2)` = -4 and `2^3^2` = 512,
 * as in mathematics; `2^-1` = 0.5. `%` keeps the dividend's sign (`-7 % 3` = -1), as in JS.
 * Whitespace is allowed anywhere between tokens. Arithmetic is IEEE double, in the order
 * written; a result of -0 comes back as 0.
 *
 * Anything else throws a HermesError code 2 (INVALID_REQUEST) with `reason` (what is wrong and
 * its 1-based character position), `expected` (what would have been valid there) and
 * `position`: unknown characters, unbalanced parentheses, an empty expression, a dangling
 * operator, two numbers in a row, division or modulo by zero, a step whose result is not a
 * finite number, nesting deeper than 200 or more than 10,000 characters.
 *
 * @example
 * evaluateExpression("(1 + 2) * 3^2"); // 27
 * evaluateExpression("-2^2");          // -4
 * evaluateExpression(".5e1 % 3");      // 2
 * evaluateExpression("1 / (2 - 2)");   // throws HermesError code 2, reason "division by zero at position 3"
 */
export function evaluateExpression(expression: string): number {
  if (typeof expression !== "string") {
    fail("the expression is not a string (at position 1)", "a string such as \"2+2\"", 1);
  }
  // Code points, so positions count characters as people do; a string of more than twice the
  // limit in UTF-16 units is too long whatever it holds, and is refused before it is split.
  const chars = expression.length > 2 * MAX_EXPRESSION_LENGTH ? [] : Array.from(expression);
  if (chars.length > MAX_EXPRESSION_LENGTH || expression.length > 2 * MAX_EXPRESSION_LENGTH) {
    const limit = MAX_EXPRESSION_LENGTH;
    fail(`the expression is longer than ${limit} characters: position ${limit + 1} is past the limit`, `at most ${limit} characters`, limit + 1);
  }
  const result = new Parser(tokenize(chars)).parse();
  return result === 0 ? 0 : result; // -0 === 0: normalises -0
}

function tokenize(chars: string[]): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < chars.length) {
    const c = chars[i]!;
    const pos = i + 1;
    if (WHITESPACE.test(c)) {
      i++;
    } else if (DIGIT.test(c) || c === ".") {
      const start = i;
      while (i < chars.length && DIGIT.test(chars[i]!)) i++;
      if (chars[i] === ".") i++;
      while (i < chars.length && DIGIT.test(chars[i]!)) i++;
      const mantissa = chars.slice(start, i).join("");
      if (mantissa === ".") fail(`a '.' without digits at position ${pos}`, "digits before or after the decimal point", pos);
      if (chars[i] === "e" || chars[i] === "E") {
        const marker = i + 1;
        i++;
        if (chars[i] === "+" || chars[i] === "-") i++;
        if (!DIGIT.test(chars[i] ?? "")) fail(`an exponent without digits at position ${marker}`, "digits after 'e', as in 1e3 or 2.5e-4", marker);
        while (i < chars.length && DIGIT.test(chars[i]!)) i++;
      }
      const text = chars.slice(start, i).join("");
      const value = Number(text);
      if (!Number.isFinite(value)) fail(`the number '${text}' at position ${pos} is too large`, "a number of magnitude below 1.8e308", pos);
      tokens.push({ kind: "number", text, value, pos });
    } else if (c === "+" || c === "-" || c === "*" || c === "/" || c === "%" || c === "^") {
      tokens.push({ kind: "op", text: c, pos });
      i++;
    } else if (c === "(" || c === ")") {
      tokens.push({ kind: c, text: c, pos });
      i++;
    } else {
      const hint = LOOKALIKES[c];
      const shown = JSON.stringify(c).slice(1, -1); // control characters stay readable
      fail(`unknown character '${shown}' at position ${pos}`, hint ? `'${hint}' instead of '${shown}'` : "digits, '.', + - * / % ^, parentheses or whitespace", pos);
    }
  }
  tokens.push({ kind: "end", text: "", pos: chars.length + 1 });
  return tokens;
}

/**
 * expression := term (("+" | "-") term)*
 * term       := unary (("*" | "/" | "%") unary)*
 * unary      := ("+" | "-") unary | power
 * power      := primary ("^" unary)?
 * primary    := number | "(" expression ")"
 */
class Parser {
  #tokens: Token[];
  #at = 0;
  #depth = 0;
  /** Parentheses opened and not yet closed. */
  #open = 0;

  constructor(tokens: Token[]) {
    this.#tokens = tokens;
  }

  parse(): number {
    const first = this.#peek();
    if (first.kind === "end") fail(`the expression is empty (end of input at position ${first.pos})`, OPERAND, first.pos);
    const value = this.#expression();
    const next = this.#peek();
    if (next.kind !== "end") this.#unexpected(next, this.#afterOperand());
    return value;
  }

  #expression(): number {
    let value = this.#term();
    for (let op = this.#peek(); op.text === "+" || op.text === "-"; op = this.#peek()) {
      this.#at++;
      const right = this.#term();
      value = finite(op.text === "+" ? value + right : value - right, value, op, right);
    }
    return value;
  }

  #term(): number {
    let value = this.#unary();
    for (let op = this.#peek(); op.text === "*" || op.text === "/" || op.text === "%"; op = this.#peek()) {
      this.#at++;
      const right = this.#unary();
      if (op.text !== "*" && right === 0) {
        const what = op.text === "/" ? "division" : "modulo";
        fail(`${what} by zero at position ${op.pos}`, `a non-zero ${op.text === "/" ? "divisor" : "modulus"}`, op.pos);
      }
      value = finite(op.text === "*" ? value * right : op.text === "/" ? value / right : value % right, value, op, right);
    }
    return value;
  }

  #unary(): number {
    const token = this.#peek();
    if (token.text !== "+" && token.text !== "-") return this.#power();
    this.#at++;
    const operand = this.#nested(token, () => this.#unary());
    return token.text === "-" ? -operand : operand;
  }

  #power(): number {
    const base = this.#primary();
    const op = this.#peek();
    if (op.text !== "^") return base;
    this.#at++;
    const exponent = this.#nested(op, () => this.#unary()); // right-associative: 2^3^2 = 2^(3^2)
    return finite(base ** exponent, base, op, exponent);
  }

  #primary(): number {
    const token = this.#peek();
    if (token.kind === "number") {
      this.#at++;
      return token.value;
    }
    if (token.kind !== "(") this.#unexpected(token, OPERAND);
    this.#at++;
    this.#open++;
    const value = this.#nested(token, () => this.#expression());
    const close = this.#peek();
    if (close.kind === "end") fail(`missing ')' for the '(' at position ${token.pos} (end of input at position ${close.pos})`, "')'", close.pos);
    if (close.kind !== ")") this.#unexpected(close, this.#afterOperand());
    this.#open--;
    this.#at++;
    return value;
  }

  /** Runs one level deeper, refusing past MAX_NESTING so hostile input cannot exhaust the stack. */
  #nested(token: Token, parse: () => number): number {
    if (++this.#depth > MAX_NESTING) fail(`nesting deeper than ${MAX_NESTING} levels at position ${token.pos}`, `at most ${MAX_NESTING} nested parentheses, signs and exponents`, token.pos);
    const value = parse();
    this.#depth--;
    return value;
  }

  #peek(): Token {
    return this.#tokens[this.#at]!;
  }

  /** What may follow a complete operand here. */
  #afterOperand(): string {
    return this.#open > 0 ? "an operator (+ - * / % ^) or ')'" : "an operator (+ - * / % ^) or the end of the expression";
  }

  #unexpected(token: Token, expected: string): never {
    if (token.kind === "end") fail(`unexpected end of input at position ${token.pos}`, expected, token.pos);
    const what = token.kind === "number" ? `number '${token.text}'` : `'${token.text}'`;
    const hint = token.text === "*" && this.#tokens[this.#at - 1]?.text === "*" ? " ('^' for powers)" : "";
    fail(`unexpected ${what} at position ${token.pos}`, expected + hint, token.pos);
  }
}

/** A step's result, refused when it is not a finite number (overflow, or a root of a negative number). */
function finite(value: number, left: number, op: Token, right: number): number {
  if (Number.isFinite(value)) return value;
  const problem = Number.isNaN(value) ? "is not a real number" : "is not finite";
  fail(`${left} ${op.text} ${right} ${problem} (at position ${op.pos})`, "an operation whose result is a finite number", op.pos);
}

function fail(reason: string, expected: string, position: number): never {
  throw new HermesError(ErrorCode.INVALID_REQUEST, `invalid expression: ${reason}; expected ${expected}`, { reason, expected, position });
}
