/**
 * A Deno program using the public API against a running mesh (test/deno/cross-runtime.test.ts):
 * `deno run … deno-client.ts <mesh dir> <actor>` requests the actor, sends 1,000 awaited
 * events to it, and prints one JSON line with the answer and the actor's event count after.
 */
import { connectMesh } from "../../src/index.ts";

const [dir, actor] = process.argv.slice(2);
const mesh = await connectMesh({ dir: dir!, name: "deno-client" });
try {
  const reply = await mesh.request(actor!, { from: "deno", runtime: "Deno" in globalThis ? "deno" : "bun" }, { timeoutMs: 10_000 });
  for (let i = 0; i < 1000; i++) await mesh.send(actor!, { i });
  const count = await mesh.request(actor!, { op: "count" }, { timeoutMs: 10_000 });
  console.log(JSON.stringify({ reply: reply.payload, count: count.payload }));
} finally {
  await mesh.close();
}
