/**
 * Writes facts to a LongTermMemory forever, printing "committed <id>" after each one, until it
 * is killed. Usage: bun memory-writer-fixture.ts <db path>
 */
import { LongTermMemory } from "../../src/agent/long-term-memory.ts";

const memory = LongTermMemory.open(process.argv[2]!);
for (let i = 1; ; i++) {
  const id = memory.remember("crash", `fact number ${i} about the writer`, { i });
  console.log(`committed ${id}`);
  // Yield so stdout reaches the test while the writer keeps writing.
  if (i % 10 === 0) await new Promise((resolve) => setImmediate(resolve));
}
