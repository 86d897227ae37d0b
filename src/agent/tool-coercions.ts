/**
 * The coercions behind argument normalisation, one function per kind of model mistake. Each
 * takes the value the model wrote and returns the value it meant with the reason, or
 * `undefined` when it cannot tell (then validation reports the field with code 2). None of
 * them guesses between two readings: ambiguity is left for the model to fix.
 */
import { repairJson } from "./tool-json-repair.ts";

/** A value a coercion produced, and a few words on why, for the normalisation notes. */
export type Coerced = { value: unknown; why: string } | undefined;

// One decimal number, optionally signed, with thousands separators ("1,000") or an exponent.
const NUMBER_LITERAL = /[+-]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/g;
const TRUE_WORDS = new Set(["true", "yes", "y", "on", "1"]);
const FALSE_WORDS = new Set(["false", "no", "n", "off", "0"]);

/**
 * A number written as text: `"3"`, `" 4.5 "`, `"3 times"`, `"about 1,000"`, `"1e3"`. The text
 * must hold exactly one number (`"3-5"` and `"2 or 3"` are ambiguous). The number is kept as
 * written: an integer field given `"4.5"` gets 4.5 and validation refuses it, while `"3.0"` is 3.
 *
 * @example
 * numberFromText("3 times"); // { value: 3, why: "number in text" }
 */
export function numberFromText(value: unknown): Coerced {
  if (typeof value !== "string") return undefined;
  const literals = value.match(NUMBER_LITERAL) ?? [];
  if (literals.length !== 1) return undefined;
  const literal = literals[0]!;
  const number = Number(literal.replaceAll(",", ""));
  if (!Number.isFinite(number)) return undefined;
  return { value: number, why: literal === value.trim() ? "number in a string" : "number in text" };
}

/**
 * A boolean written as a word or a digit: yes/no, y/n, true/false, on/off, 1/0 (any case,
 * surrounding spaces ignored), or the numbers 1 and 0.
 *
 * @example
 * booleanFromValue("Yes"); // { value: true, why: "boolean as a word" }
 */
export function booleanFromValue(value: unknown): Coerced {
  if (value === 1 || value === 0) return { value: value === 1, why: "boolean as a number" };
  if (typeof value !== "string") return undefined;
  const word = value.trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return { value: true, why: "boolean as a word" };
  if (FALSE_WORDS.has(word)) return { value: false, why: "boolean as a word" };
  return undefined;
}

/**
 * Text from a value of another type: a number or boolean as written (`42` → `"42"`), an
 * object or array as its JSON text (a model that "writes JSON to a file" passes the object).
 *
 * @example
 * textFromValue(42); // { value: "42", why: "number as text" }
 */
export function textFromValue(value: unknown): Coerced {
  if (typeof value === "number" && Number.isFinite(value)) return { value: String(value), why: "number as text" };
  if (typeof value === "boolean") return { value: String(value), why: "boolean as text" };
  if (typeof value === "object" && value !== null) return { value: JSON.stringify(value), why: "JSON value as text" };
  return undefined;
}

/**
 * The enum member a string meant, tried in order: the same word in another case or with
 * spaces (`"JSON"` → `"json"`); exactly one member inside the text (`"JSON格式"` → `"json"`,
 * where a longer member containing the others wins: `"jsonl file"` → `"jsonl"`); exactly one
 * member nearest by edit distance, if within 2 and at most half the member's length
 * (`"jsn"` → `"json"` even beside `"jsonl"`, two edits away; a tie is ambiguous).
 *
 * @example
 * enumMember("JSON格式", ["json", "text"]); // { value: "json", why: "enum member inside the text" }
 */
export function enumMember(value: unknown, members: readonly unknown[]): Coerced {
  if (typeof value !== "string") return undefined;
  const words = members.filter((m): m is string => typeof m === "string");
  const text = value.trim().toLowerCase();
  const same = words.filter((m) => m.toLowerCase() === text);
  if (same.length > 0) return same.length === 1 ? { value: same[0], why: "enum case" } : undefined;
  const inside = words.filter((m) => m.length >= 2 && text.includes(m.toLowerCase()));
  const widest = inside.filter((m) => inside.every((other) => m.toLowerCase().includes(other.toLowerCase())));
  if (widest.length === 1) return { value: widest[0], why: "enum member inside the text" };
  if (inside.length > 1) return undefined;
  const near = words
    .map((m) => ({ m, d: editDistance(text, m.toLowerCase()) }))
    .filter(({ m, d }) => d <= Math.min(2, Math.floor(m.length / 2)));
  const closest = Math.min(...near.map(({ d }) => d));
  const best = near.filter(({ d }) => d === closest);
  return best.length === 1 ? { value: best[0]!.m, why: `enum near miss (edit distance ${closest})` } : undefined;
}

/**
 * An object or array written as JSON text, read leniently (see `repairJson`) and only
 * accepted when it is of the kind the schema expects.
 *
 * @example
 * jsonFromText('{"a": 1}', "object"); // { value: { a: 1 }, why: "JSON text parsed" }
 */
export function jsonFromText(value: unknown, kind: "object" | "array"): Coerced {
  if (typeof value !== "string") return undefined;
  for (const [text, why] of candidates(value)) {
    try {
      const parsed: unknown = JSON.parse(text);
      const isArray = Array.isArray(parsed);
      if (kind === "array" ? isArray : typeof parsed === "object" && parsed !== null && !isArray) return { value: parsed, why };
    } catch {
      // not this reading; try the next
    }
  }
  return undefined;
}

/**
 * A single value where an array is expected, as an array of one.
 *
 * @example
 * wrapInArray("a"); // { value: ["a"], why: "single value wrapped in an array" }
 */
export function wrapInArray(value: unknown): Coerced {
  if (value === undefined || value === null || Array.isArray(value)) return undefined;
  return { value: [value], why: "single value wrapped in an array" };
}

function candidates(value: string): Array<[string, string]> {
  const { text, repairs } = repairJson(value);
  const out: Array<[string, string]> = [[value, "JSON text parsed"]];
  if (repairs.length > 0) out.push([text, `JSON text parsed after repair: ${repairs.join(", ")}`]);
  return out;
}

/** Levenshtein distance over code points: insertions, deletions and substitutions. */
export function editDistance(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const current = [i];
    for (let j = 1; j <= y.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[y.length]!;
}
