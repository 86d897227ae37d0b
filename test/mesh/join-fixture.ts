/**
 * A script that tries to connect to a mesh, as a user writes one, and does nothing else:
 * whatever happens it must then exit on its own (nothing left open keeps it alive).
 * Argv: <mesh dir> <name> [token]. Prints "joined", or "rejected <code>".
 */
import { connectMesh, HermesError } from "../../src/index.ts";

const [dir, name, token] = process.argv.slice(2);
try {
  const mesh = await connectMesh({ dir: dir!, name: name!, ...(token && { token }) });
  console.log("joined");
  await mesh.close();
} catch (error) {
  console.log(`rejected ${error instanceof HermesError ? error.code : String(error)}`);
}
