import { PathSyntaxError, readPath, resolvePath, type PathSegment } from "./path-expression.ts";

/**
 * The condition language of `when` and `send_back.when`: a tiny, safe expression language
 * parsed here and evaluated over plain data, never through eval or Function.
 *
 *   expr   := or
 *   or     := and (("or" | "||") and)*
 *   and    := not (("and" | "&&") not)*
 *   not    := ("not" | "!") not | cmp
 *   cmp    := value (("==" | "!=" | "<" | "<=" | ">" | ">=" | "in") value)?
 *   value  := path | number | string | true | false | null | "[" values "]" | "(" expr ")"
 *
 * Paths are `$.input.x`, `$.nodes.a.result.y`, ... (path-expression.ts). A missing path is
 * `undefined`, which equals `null` and nothing else; `<` and friends compare numbers with
 * numbers and strings with strings, and are false for anything else.
 */
export type Condition =
  | { kind: "path"; segments: PathSegment[] }
  | { kind: "literal"; value: unknown }
  | { kind: "list"; items: Condition[] }
  | { kind: "not"; operand: Condition }
  | { kind: "and" | "or"; left: Condition; right: Condition }
  | { kind: "compare"; op: CompareOp; left: Condition; right: Condition };

type CompareOp = "==" | "!=" | "<" | "<=" | ">" | ">=" | "in";

/** A parsed condition and the paths it reads (the loader checks them against the graph). */
export interface CompiledCondition {
  source: string;
  ast: Condition;
  paths: PathSegment[][];
}

type Token = { type: "path"; segments: PathSegment[]; at: number } | { type: "value"; value: unknown; at: number } | { type: "op"; op: string; at: number } | { type: "end"; at: number };

const OPS = ["==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", "[", "]", ","];
const WORDS: Record<string, Token["type"] | "op"> = { and: "op", or: "op", not: "op", in: "op" };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "$") {
      const { segments, end } = readPath(text, i);
      tokens.push({ type: "path", segments, at: i });
      i = end;
    } else if (c === '"' || c === "'") {
      const close = text.indexOf(c, i + 1);
      if (close < 0) throw new PathSyntaxError("unterminated string", i);
      tokens.push({ type: "value", value: text.slice(i + 1, close), at: i });
      i = close + 1;
    } else if (/[0-9-]/.test(c) && /^-?\d/.test(text.slice(i, i + 2))) {
      const match = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i))!;
      tokens.push({ type: "value", value: Number(match[0]), at: i });
      i += match[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i))![0];
      if (word === "true" || word === "false") tokens.push({ type: "value", value: word === "true", at: i });
      else if (word === "null") tokens.push({ type: "value", value: null, at: i });
      else if (WORDS[word]) tokens.push({ type: "op", op: word, at: i });
      else throw new PathSyntaxError(`unknown word '${word}' (paths start with $., strings are quoted)`, i);
      i += word.length;
    } else {
      const op = OPS.find((o) => text.startsWith(o, i));
      if (!op) throw new PathSyntaxError(`unexpected '${c}'`, i);
      tokens.push({ type: "op", op, at: i });
      i += op.length;
    }
  }
  tokens.push({ type: "end", at: text.length });
  return tokens;
}

/**
 * Parses a condition. Throws PathSyntaxError (with the position) on bad syntax.
 *
 * @example
 * const c = compileCondition("$.input.mode == 'fast' and not $.nodes.check.result.blocked");
 * evaluateCondition(c, { input: { mode: "fast" }, nodes: { check: { result: {} } } }); // true
 */
export function compileCondition(source: string): CompiledCondition {
  const tokens = tokenize(source);
  const paths: PathSegment[][] = [];
  let pos = 0;
  const peek = () => tokens[pos]!;
  const isOp = (...ops: string[]) => {
    const t = peek();
    return t.type === "op" && ops.includes(t.op);
  };
  const expect = (op: string) => {
    if (!isOp(op)) throw new PathSyntaxError(`expected '${op}'`, peek().at);
    pos++;
  };
  const or = (): Condition => {
    let left = and();
    while (isOp("or", "||")) {
      pos++;
      left = { kind: "or", left, right: and() };
    }
    return left;
  };
  const and = (): Condition => {
    let left = not();
    while (isOp("and", "&&")) {
      pos++;
      left = { kind: "and", left, right: not() };
    }
    return left;
  };
  const not = (): Condition => {
    if (isOp("not", "!")) {
      pos++;
      return { kind: "not", operand: not() };
    }
    const left = value();
    if (isOp("==", "!=", "<", "<=", ">", ">=", "in")) {
      const op = (tokens[pos++] as { op: CompareOp }).op;
      return { kind: "compare", op, left, right: value() };
    }
    return left;
  };
  const value = (): Condition => {
    const t = tokens[pos++]!;
    if (t.type === "path") {
      paths.push(t.segments);
      return { kind: "path", segments: t.segments };
    }
    if (t.type === "value") return { kind: "literal", value: t.value };
    if (t.type === "op" && t.op === "(") {
      const inner = or();
      expect(")");
      return inner;
    }
    if (t.type === "op" && t.op === "[") {
      const items: Condition[] = [];
      while (!isOp("]")) {
        items.push(value());
        if (!isOp("]")) expect(",");
      }
      pos++;
      return { kind: "list", items };
    }
    throw new PathSyntaxError(t.type === "end" ? "the condition ends too early" : `unexpected '${t.type === "op" ? t.op : ""}'`, t.at);
  };
  const ast = or();
  if (peek().type !== "end") throw new PathSyntaxError("unexpected text after the condition", peek().at);
  return { source, ast, paths };
}

/**
 * Evaluates a compiled condition over a scope (`{ input, nodes, feedback, ... }`) to a boolean.
 *
 * @example
 * evaluateCondition(compileCondition("$.result.valid == false"), { result: { valid: false } }); // true
 */
export function evaluateCondition(condition: CompiledCondition, scope: unknown): boolean {
  return truthy(evaluate(condition.ast, scope));
}

function evaluate(node: Condition, scope: unknown): unknown {
  switch (node.kind) {
    case "path":
      return resolvePath(scope, node.segments);
    case "literal":
      return node.value;
    case "list":
      return node.items.map((item) => evaluate(item, scope));
    case "not":
      return !truthy(evaluate(node.operand, scope));
    case "and":
      return truthy(evaluate(node.left, scope)) && truthy(evaluate(node.right, scope));
    case "or":
      return truthy(evaluate(node.left, scope)) || truthy(evaluate(node.right, scope));
    case "compare":
      return compare(node.op, evaluate(node.left, scope), evaluate(node.right, scope));
  }
}

function compare(op: CompareOp, a: unknown, b: unknown): boolean {
  switch (op) {
    case "==":
      return same(a, b);
    case "!=":
      return !same(a, b);
    case "in":
      if (Array.isArray(b)) return b.some((item) => same(a, item));
      if (typeof b === "string") return typeof a === "string" && b.includes(a);
      return typeof a === "string" && b !== null && typeof b === "object" && Object.hasOwn(b, a);
    default: {
      const comparable = (typeof a === "number" && typeof b === "number") || (typeof a === "string" && typeof b === "string");
      if (!comparable) return false;
      const [x, y] = [a as number | string, b as number | string];
      return op === "<" ? x < y : op === "<=" ? x <= y : op === ">" ? x > y : x >= y;
    }
  }
}

/** Equality over plain data: missing equals null, lists and maps compare by content. */
function same(a: unknown, b: unknown): boolean {
  if (a === undefined) a = null;
  if (b === undefined) b = null;
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  return Boolean(value);
}
