/**
 * Bun's errors for a module that does not compile or whose imports do not resolve, as
 * compiler-style text. `import()` of such a file throws a BuildMessage (one syntax error), an
 * AggregateError of them (`3 errors building "…/broken.ts"`, a message with no position at
 * all), or a ResolveMessage (an import not found). A BuildMessage carries `position`
 * `{ file, line, column, lineText }`, 1-based, which String(error) leaves out; a ResolveMessage
 * has none, but its text names the missing module and the file importing it.
 */

/** The fields of Bun's BuildMessage and ResolveMessage this reads. */
interface BunMessage {
  name: "BuildMessage" | "ResolveMessage";
  message: string;
  position?: { file?: string; line?: number; column?: number; lineText?: string } | null;
}

function isBunMessage(value: unknown): value is BunMessage {
  if (typeof value !== "object" || value === null) return false;
  const { name, message } = value as { name?: unknown; message?: unknown };
  return (name === "BuildMessage" || name === "ResolveMessage") && typeof message === "string";
}

/** The build or resolve errors inside `error`, or undefined when it is some other error. */
function buildMessagesOf(error: unknown): BunMessage[] | undefined {
  if (isBunMessage(error)) return [error];
  if (error instanceof AggregateError && error.errors.length > 0 && error.errors.every(isBunMessage)) return error.errors;
  return undefined;
}

/**
 * Each build error of a module that failed to load as `file:line:column: message`, followed by
 * its source line and a caret under the column when Bun gave them; undefined when `error` is
 * not a build or resolve error (then String(error) says it all).
 *
 * @example
 * try {
 *   await import("./broken.ts");
 * } catch (error) {
 *   console.error(formatBuildErrors(error) ?? String(error));
 *   // /work/actors/broken.ts:5:15: Unexpected ;
 *   //     const x = ;
 *   //               ^
 * }
 */
export function formatBuildErrors(error: unknown): string | undefined {
  const messages = buildMessagesOf(error);
  if (!messages) return undefined;
  return messages.map(formatOne).join("\n");
}

function formatOne(message: BunMessage): string {
  const at = message.position;
  if (!at?.file) return message.message; // a ResolveMessage names its importer in its text
  const where = at.line ? `${at.file}:${at.line}${at.column ? `:${at.column}` : ""}` : at.file;
  const lines = [`${where}: ${message.message}`];
  if (at.lineText && at.column) {
    // Tabs kept as tabs, so the caret lines up however the terminal expands them.
    const indent = at.lineText.slice(0, at.column - 1).replace(/[^\t]/g, " ");
    lines.push(at.lineText, `${indent}^`);
  }
  return lines.join("\n");
}
