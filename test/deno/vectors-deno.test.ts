/**
 * The conformance vectors on Deno: test/deno/vectors-on-deno.ts runs the runtime-neutral checks
 * of test/conformance/vectors.test.ts in a Deno process with the least permissions it needs
 * (read vectors.json, and the one variable msgpackr reads). The count of checks made is
 * compared with one computed here from vectors.json, so a script that skipped vectors fails.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import type { VectorFile } from "../conformance/vector-format.ts";
import { spawnDeno } from "../helpers.ts";

const VECTORS = join(import.meta.dir, "../../docs/conformance/vectors.json");
const SCRIPT = join(import.meta.dir, "vectors-on-deno.ts");
/** What the script checks of each vector: decode and re-encode for a valid one, refused for an invalid one. */
const CHECKS_PER_VECTOR = { valid: 2, invalid: 1 };

test("every conformance vector decodes, re-encodes or is refused on Deno as on Bun", async () => {
  const file: VectorFile = await Bun.file(VECTORS).json();
  const valid = file.vectors.filter((v) => v.valid).length;
  const invalid = file.vectors.length - valid;
  expect(valid).toBeGreaterThan(0);
  expect(invalid).toBeGreaterThan(0);

  await using deno = spawnDeno(SCRIPT, [], [`--allow-read=${VECTORS}`, "--allow-env=MSGPACKR_NATIVE_ACCELERATION_DISABLED"]);
  const report: { checked: number; failures: unknown[] } = JSON.parse(await deno.waitForLine(/^\{"checked":/, 30_000));
  expect(await deno.proc.exited).toBe(0);
  expect(report.failures).toEqual([]);
  expect(report.checked).toBe(valid * CHECKS_PER_VECTOR.valid + invalid * CHECKS_PER_VECTOR.invalid);
}, 40_000);
