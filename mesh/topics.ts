import { ErrorCode, HermesError } from "./errors.ts";

/**
 * Topics are dot-separated words, e.g. `task.image.generate`. Patterns use the same words plus
 * two wildcards, each a whole segment: `*` matches exactly one level, `#` zero or more levels
 * (anywhere in the pattern, possibly several times).
 */

const LITERAL = /^[A-Za-z0-9_-]+$/;

function invalid(kind: "topic" | "pattern", text: string, reason: string): HermesError {
  return new HermesError(ErrorCode.INVALID_REQUEST, `invalid ${kind} ${JSON.stringify(text)}: ${reason}`, {
    reason,
    expected: kind === "topic" ? "dot-separated words of [A-Za-z0-9_-]" : "dot-separated words of [A-Za-z0-9_-], '*' or '#'",
  });
}

function check(kind: "topic" | "pattern", text: string): void {
  if (typeof text !== "string" || text.length === 0) throw invalid(kind, String(text), "empty");
  const segments = text.split(".");
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.length === 0) throw invalid(kind, text, `segment ${i + 1} is empty`);
    if (LITERAL.test(segment)) continue;
    if (kind === "pattern" && (segment === "*" || segment === "#")) continue;
    if (/[*#]/.test(segment)) {
      throw invalid(kind, text, kind === "topic"
        ? `wildcards are not allowed in a topic (segment ${JSON.stringify(segment)})`
        : `'*' and '#' must be a whole segment (segment ${JSON.stringify(segment)})`);
    }
    throw invalid(kind, text, `segment ${JSON.stringify(segment)} has characters outside [A-Za-z0-9_-]`);
  }
}

/**
 * Throws HermesError code 2 unless `topic` is a concrete topic (no wildcards).
 *
 * @example
 * validateTopic("task.image.generate"); // ok
 * validateTopic("task..generate");      // throws: segment 2 is empty
 */
export function validateTopic(topic: string): void {
  check("topic", topic);
}

/**
 * Throws HermesError code 2 unless `pattern` is a valid subscription pattern.
 *
 * @example
 * validatePattern("task.*.generate"); // ok
 * validatePattern("task.im*");        // throws: '*' and '#' must be a whole segment
 */
export function validatePattern(pattern: string): void {
  check("pattern", pattern);
}

/**
 * True when `topic` matches `pattern`. Neither is validated here (this is on the routing path):
 * validate patterns once when they are declared.
 *
 * @example
 * topicMatches("task.*.generate", "task.image.generate"); // true
 * topicMatches("task.#", "task");                           // true
 * topicMatches("#.done", "a.b.done");                       // true
 */
export function topicMatches(pattern: string, topic: string): boolean {
  const p = pattern.split(".");
  const t = topic.split(".");
  // The set of pattern positions reachable after consuming each topic segment (an NFA run):
  // linear in pattern length times topic length however many '#' there are.
  let states = closure(p, [0]);
  for (const segment of t) {
    const next: number[] = [];
    for (const i of states) {
      const word = p[i];
      if (word === "#") next.push(i);
      else if (word === "*" || word === segment) next.push(i + 1);
    }
    if (next.length === 0) return false;
    states = closure(p, next);
  }
  return states.includes(p.length);
}

/** Adds the positions after every '#' that can match zero levels. */
function closure(p: string[], positions: number[]): number[] {
  const out = new Set<number>();
  for (let i of positions) {
    out.add(i);
    while (p[i] === "#") out.add(++i);
  }
  return [...out];
}

interface Node<T> {
  literal: Map<string, Node<T>>;
  star?: Node<T>;
  hash?: Node<T>;
  values: Set<T>;
}

const newNode = <T>(): Node<T> => ({ literal: new Map(), values: new Set() });

/**
 * Maps topic patterns to values and finds every value whose pattern matches a topic. Patterns
 * are compiled into a trie of segments, so a lookup visits only the branches a topic can
 * follow instead of testing every pattern.
 *
 * @example
 * const index = new TopicIndex<string>();
 * index.add("task.*.generate", "imager");
 * index.add("task.#", "logger");
 * index.match("task.image.generate"); // ["imager", "logger"] (in some order)
 */
export class TopicIndex<T> {
  #root: Node<T> = newNode();
  #size = 0;

  /** Number of (pattern, value) pairs held. */
  get size(): number {
    return this.#size;
  }

  /** Adds `value` under `pattern` (validated; throws HermesError code 2). Adding a pair twice keeps one. */
  add(pattern: string, value: T): void {
    validatePattern(pattern);
    let node = this.#root;
    for (const word of pattern.split(".")) node = this.#child(node, word, true)!;
    if (!node.values.has(value)) {
      node.values.add(value);
      this.#size++;
    }
  }

  /** Removes `value` from `pattern`; returns false when the pair was not there. */
  remove(pattern: string, value: T): boolean {
    const path: [Node<T>, string][] = [];
    let node: Node<T> | undefined = this.#root;
    for (const word of pattern.split(".")) {
      path.push([node, word]);
      node = this.#child(node, word, false);
      if (!node) return false;
    }
    if (!node.values.delete(value)) return false;
    this.#size--;
    // Prune branches left empty, deepest first, so removed patterns cost nothing at lookup.
    for (let i = path.length - 1; i >= 0; i--) {
      const [parent, word] = path[i]!;
      const child = this.#child(parent, word, false)!;
      if (child.values.size > 0 || child.literal.size > 0 || child.star || child.hash) break;
      if (word === "*") parent.star = undefined;
      else if (word === "#") parent.hash = undefined;
      else parent.literal.delete(word);
    }
    return true;
  }

  /** Every value whose pattern matches `topic`, each once. */
  match(topic: string): T[] {
    const words = topic.split(".");
    const found = new Set<T>();
    // seen[i] holds the nodes already visited at topic position i: with several '#' the same
    // (node, position) pair is reachable many ways, and visiting it once keeps this polynomial.
    const seen: Set<Node<T>>[] = Array.from({ length: words.length + 1 }, () => new Set());
    const visit = (node: Node<T>, i: number): void => {
      if (seen[i]!.has(node)) return;
      seen[i]!.add(node);
      if (node.hash) for (let j = i; j <= words.length; j++) visit(node.hash, j);
      if (i === words.length) {
        for (const value of node.values) found.add(value);
        return;
      }
      const literal = node.literal.get(words[i]!);
      if (literal) visit(literal, i + 1);
      if (node.star) visit(node.star, i + 1);
    };
    visit(this.#root, 0);
    return [...found];
  }

  #child(node: Node<T>, word: string, create: boolean): Node<T> | undefined {
    if (word === "*") return node.star ?? (create ? (node.star = newNode()) : undefined);
    if (word === "#") return node.hash ?? (create ? (node.hash = newNode()) : undefined);
    let child = node.literal.get(word);
    if (!child && create) node.literal.set(word, (child = newNode()));
    return child;
  }
}
