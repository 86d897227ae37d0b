/**
 * A lenient reading of almost-JSON, for the argument text models write. Only repairs whose
 * meaning is unambiguous are made, by one scan that knows where strings are (so a `,}` or a
 * `'` inside a string is never touched).
 */

/** What `repairJson` fixed, by kind; also used in the normalisation notes. */
export const JsonRepair = {
  CODE_FENCE: "code fence removed",
  TRAILING_COMMA: "trailing comma",
  SINGLE_QUOTES: "single quotes",
  UNQUOTED_KEY: "unquoted key",
  PYTHON_LITERAL: "Python True/False/None",
} as const;
export type JsonRepair = (typeof JsonRepair)[keyof typeof JsonRepair];

const FENCE = /^```[A-Za-z]*[ \t]*\r?\n([\s\S]*?)\r?\n?```$/;
const IDENTIFIER_START = /[A-Za-z_$]/;
const IDENTIFIER_PART = /[A-Za-z0-9_$]/;
const PYTHON: Record<string, string> = { True: "true", False: "false", None: "null" };

/**
 * Rewrites almost-JSON into JSON: removes a Markdown code fence around the text, commas before
 * `}` or `]`, turns single-quoted strings into double-quoted ones, quotes bare object keys
 * (`{count: 3}`) and maps Python's `True`/`False`/`None`. Returns the text and the repairs made
 * (none: the text was left as it was). The result may still not be JSON; `JSON.parse` decides.
 *
 * @example
 * repairJson("{'count': 3, 'tags': ['a',],}");
 * // { text: '{"count": 3, "tags": ["a"]}', repairs: ["single quotes", "trailing comma"] }
 */
export function repairJson(input: string): { text: string; repairs: JsonRepair[] } {
  const repairs = new Set<JsonRepair>();
  let text = input.trim();
  const fenced = FENCE.exec(text);
  if (fenced) {
    text = fenced[1]!.trim();
    repairs.add(JsonRepair.CODE_FENCE);
  }
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"' || c === "'") {
      const end = stringEnd(text, i);
      if (end >= text.length) {
        out += text.slice(i); // unclosed: left for JSON.parse to refuse
        break;
      }
      const body = text.slice(i + 1, end);
      if (c === "'") repairs.add(JsonRepair.SINGLE_QUOTES);
      out += c === "'" ? `"${requote(body)}"` : `"${body}"`;
      i = end + 1;
    } else if (c === ",") {
      const next = text.slice(i + 1).trimStart()[0];
      if (next === "}" || next === "]") repairs.add(JsonRepair.TRAILING_COMMA);
      else out += c;
      i++;
    } else if (IDENTIFIER_START.test(c) && !IDENTIFIER_PART.test(text[i - 1] ?? "")) {
      let end = i + 1;
      while (end < text.length && IDENTIFIER_PART.test(text[end]!)) end++;
      const word = text.slice(i, end);
      if (text.slice(end).trimStart()[0] === ":") {
        repairs.add(JsonRepair.UNQUOTED_KEY);
        out += `"${word}"`;
      } else if (PYTHON[word]) {
        repairs.add(JsonRepair.PYTHON_LITERAL);
        out += PYTHON[word];
      } else {
        out += word; // true, false, null, or something JSON.parse will refuse
      }
      i = end;
    } else {
      out += c;
      i++;
    }
  }
  return { text: repairs.size > 0 ? out : input, repairs: [...repairs] };
}

/** Index of the quote closing the string opened at `start` (the text's length if unclosed). */
function stringEnd(text: string, start: number): number {
  const quote = text[start];
  let i = start + 1;
  while (i < text.length && text[i] !== quote) i += text[i] === "\\" ? 2 : 1;
  return Math.min(i, text.length);
}

/** The body of a single-quoted string as the body of a double-quoted one: `\'` unescaped, `"` escaped. */
function requote(body: string): string {
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === "\\") {
      const next = body[i + 1] ?? "";
      out += next === "'" ? "'" : c + next;
      i++;
    } else {
      out += c === '"' ? '\\"' : c;
    }
  }
  return out;
}
